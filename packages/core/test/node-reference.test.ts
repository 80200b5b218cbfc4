import { readFile } from 'node:fs/promises'
import t from 'tap'
import { nodeReferenceMarkdown } from '../src/engine/nodes/reference.ts'

t.test('docs/nodes.md is the reference the definitions write (pnpm docs:nodes)', async (t) => {
  const written = await readFile(new URL('../../../docs/nodes.md', import.meta.url), 'utf8')
  t.equal(written, nodeReferenceMarkdown(), 'run pnpm docs:nodes after changing a node definition')
})
