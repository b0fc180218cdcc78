/** Types of kill-order.mjs (a plain ESM module of the mutation command). */
export interface KillingReport {
  results?: readonly { id: string; outcome: string }[]
}

export declare class KillOrder {
  constructor(file?: string)
  add(section: string | undefined, report: KillingReport | undefined, module?: string): void
  first(section: string | undefined, module?: string): string[]
}
