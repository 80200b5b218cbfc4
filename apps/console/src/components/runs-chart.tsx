import { clock } from '../format.ts'
import type { RunStats, RunStatus } from '../types.ts'

/** Bottom to top: finished runs first, the unfinished above them. */
const STACK: RunStatus[] = ['SUCCESS', 'FAILED', 'CANCELLED', 'WAITING', 'RUNNING', 'PENDING']
const WIDTH = 720
const HEIGHT = 180
const AXIS = 28
const TOP = 10

/** Runs created per minute, stacked by status; the numbers are in the title of each bar and in the legend's totals. */
export function RunsChart ({ stats }: { stats: RunStats }) {
  const { buckets } = stats
  const totals = Object.fromEntries(STACK.map((status) => [status, buckets.reduce((sum, bucket) => sum + bucket.counts[status], 0)])) as Record<RunStatus, number>
  const peak = Math.max(1, ...buckets.map((bucket) => STACK.reduce((sum, status) => sum + bucket.counts[status], 0)))
  const slot = (WIDTH - AXIS) / Math.max(1, buckets.length)
  const scale = (HEIGHT - TOP - 18) / peak
  const summary = STACK.filter((status) => totals[status] > 0).map((status) => `${totals[status]} ${status}`).join(', ') || 'no runs'
  return (
    <figure class='chart'>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role='img' aria-label={`Runs created per minute over the last ${buckets.length} minutes: ${summary}`}>
        <line x1={AXIS} y1={HEIGHT - 18} x2={WIDTH} y2={HEIGHT - 18} class='axis' />
        <text x={AXIS - 6} y={TOP + 4} text-anchor='end' class='tick'>{peak}</text>
        <text x={AXIS - 6} y={HEIGHT - 18} text-anchor='end' class='tick'>0</text>
        {buckets.map((bucket, i) => {
          let y = HEIGHT - 18
          const x = AXIS + i * slot
          const parts = STACK.filter((status) => bucket.counts[status] > 0)
          return (
            <g key={bucket.minute}>
              <title>{`${clock(bucket.minute)}: ${parts.map((status) => `${bucket.counts[status]} ${status}`).join(', ') || 'no runs'}`}</title>
              <rect x={x} y={TOP} width={slot} height={HEIGHT - 18 - TOP} class='hover-target' />
              {parts.map((status) => {
                const height = bucket.counts[status] * scale
                y -= height
                return <rect key={status} x={x + 1} y={y} width={Math.max(1, slot - 2)} height={height} class={`bar status-${status.toLowerCase()}`} />
              })}
              {i % 10 === 0 && <text x={x} y={HEIGHT - 4} class='tick'>{clock(bucket.minute)}</text>}
            </g>
          )
        })}
      </svg>
      <figcaption>
        <ul class='legend'>
          {STACK.map((status) => (
            <li key={status}><span class={`swatch status-${status.toLowerCase()}`} aria-hidden='true' />{status} <strong>{totals[status]}</strong></li>
          ))}
        </ul>
      </figcaption>
    </figure>
  )
}
