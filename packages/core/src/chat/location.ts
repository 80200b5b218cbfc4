import type { ChatMessageDetails } from '../db/schema/index.ts'

type Location = NonNullable<ChatMessageDetails['location']>

/** A place's name, address or link as kept: longer than the platform sends. */
const PLACE_TEXT_MAX = 1000

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

const coordinate = (value: unknown, bound: number): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= bound ? value : undefined

/** The place an inbound `location` message shares; undefined for any other message, or coordinates that are no place. */
export function inboundLocationOf (message: Record<string, unknown>): Location | undefined {
  const part = message.location
  if (message.type !== 'location' || !isRecord(part)) return undefined
  const latitude = coordinate(part.latitude, 90)
  const longitude = coordinate(part.longitude, 180)
  if (latitude === undefined || longitude === undefined) return undefined
  const location: Location = { latitude, longitude }
  for (const field of ['name', 'address', 'url'] as const) {
    const value = part[field]
    if (typeof value === 'string' && value !== '') location[field] = value.slice(0, PLACE_TEXT_MAX)
  }
  return location
}
