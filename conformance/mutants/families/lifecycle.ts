import type { Mutant } from '../proxy.js'

export function lifecycleMutants(): Mutant[] {
  return []
}
