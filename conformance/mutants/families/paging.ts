import type { Mutant } from '../proxy.js'

export function pagingMutants(): Mutant[] {
  return []
}
