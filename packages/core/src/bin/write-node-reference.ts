import { writeFile } from 'node:fs/promises'
import { nodeReferenceMarkdown } from '../engine/nodes/reference.ts'

/** `pnpm docs:nodes`: writes docs/nodes.md from the node definitions. */
const target = new URL('../../../../docs/nodes.md', import.meta.url)
await writeFile(target, nodeReferenceMarkdown())
process.stdout.write(`wrote ${target.pathname}\n`)
