import type { UserRole } from '../db/schema/index.ts'

/**
 * Who is asking, for every owner-scoped read and write: members see and change
 * their own workflows and runs, admins everyone's (contract section 3).
 */
export interface Viewer {
  id: string
  role: UserRole
}

/** The viewer of an authenticated request, from its token's claims. */
export const viewerOf = (claims: { sub: string, role: UserRole }): Viewer => ({ id: claims.sub, role: claims.role })

export const isAdmin = (viewer: Viewer): boolean => viewer.role === 'admin'
