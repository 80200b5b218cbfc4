import { Type } from 'typebox'

/** The public resume token (`rst_` and 43 base64url characters); anything else is answered like an unknown one. */
export const ResumeTokenParams = Type.Object({ token: Type.String({ maxLength: 100 }) })
