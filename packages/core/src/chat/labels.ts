import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { DomainError } from '../errors.ts'

/**
 * Bounds of labels (README, The team inbox: labels): a label's characters, and the labels one
 * conversation or one contact carries. The API's schemas, the handoff node and the import check them.
 */
export const LABEL_BOUNDS = { chars: 50, perRecord: 50 } as const

/** A label added to a conversation or a contact that carries as many as it may. */
export const tooManyLabels = (what: 'conversation' | 'contact'): DomainError =>
  new DomainError('VALIDATION_ERROR', `labels: the ${what} carries ${LABEL_BOUNDS.perRecord} labels, at most ${LABEL_BOUNDS.perRecord}: remove one first`)

/** A label of a number, with how many of its conversations (archived ones too) and contacts carry it. */
interface LabelCount {
  name: string
  conversations: number
  contacts: number
}

/**
 * The labels of a platform number: every label its conversations or contacts carry, counted when
 * read (no table of labels: a label exists while something carries it).
 */
export function labelsRepository (db: DbOrTx) {
  return {
    /** By name, paged like every list. */
    async list (phoneNumberId: string, page: { limit: number, offset: number }): Promise<LabelCount[]> {
      return db.execute<LabelCount & Record<string, unknown>>(sql`
        select l.name, count(*) filter (where l.source = 'conversation')::int as conversations,
          count(*) filter (where l.source = 'contact')::int as contacts
        from (
          select unnest(labels) as name, 'conversation' as source from conversations where phone_number_id = ${phoneNumberId}
          union all
          select unnest(labels), 'contact' from chat_contacts where phone_number_id = ${phoneNumberId}
        ) l
        group by l.name
        order by l.name
        limit ${page.limit} offset ${page.offset}`)
    }
  }
}

export type LabelsRepository = ReturnType<typeof labelsRepository>
