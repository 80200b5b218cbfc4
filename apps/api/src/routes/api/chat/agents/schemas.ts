import { Type } from 'typebox'
import { Pagination } from '../../../../schemas/common.ts'

/** Someone a conversation of the selected account may be assigned to. */
export const Agent = Type.Object({
  id: Type.String(),
  email: Type.String()
})

export const AgentsQuery = Type.Object({ ...Pagination })
