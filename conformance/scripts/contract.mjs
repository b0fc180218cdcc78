// Packing ships the contract inside the package (contract/) and the compiled suite (dist/); after packing both are
// removed again, so the repository keeps one copy of the contract (openapi/) and no build output.
import { cpSync, rmSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..')
const command = process.argv[2]
if (command === 'copy') {
  cpSync(
    join(root, '..', 'openapi', 'agent-operations.yaml'),
    join(root, 'contract', 'agent-operations.yaml'),
  )
} else if (command === 'clean') {
  rmSync(join(root, 'contract'), { recursive: true, force: true })
  rmSync(join(root, 'dist'), { recursive: true, force: true })
} else {
  process.stderr.write('usage: node scripts/contract.mjs copy|clean\n')
  process.exitCode = 2
}
