import { Type } from 'typebox'
import { Pagination, Timestamp } from '../../../../schemas/common.ts'

export const ListApprovalsQuery = Type.Object({ ...Pagination })

/** A run waiting at an approval node for the viewer's decision. */
export const PendingApproval = Type.Object({
  runId: Type.String(),
  workflowId: Type.String(),
  nodeId: Type.String(),
  message: Type.Union([Type.String(), Type.Null()], { description: 'what the approver is asked' }),
  expiresAt: Timestamp,
  createdAt: Timestamp
})
