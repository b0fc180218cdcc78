import type { Mutant } from '../proxy.js'

export function accessMutants(): Mutant[] {
  return []
}
