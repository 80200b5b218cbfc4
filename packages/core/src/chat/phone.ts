import { DomainError } from '../errors.ts'

/** Recipients are digits only (README, Chat); a leading plus and the usual separators are forgiven. */
export function normalizePhone (to: string): string {
  const digits = to.trim().replace(/^\+/, '').replace(/[\s().-]/g, '')
  if (!/^\d{6,15}$/.test(digits)) throw new DomainError('INVALID_PHONE', 'to must be a phone number in international format')
  return digits
}
