import { PageTitle } from '../components/ui.tsx'

export function NotFound () {
  return (
    <section>
      <PageTitle>Page not found</PageTitle>
      <p>Nothing lives at this address. <a href='/console/'>Go to the overview</a>.</p>
    </section>
  )
}
