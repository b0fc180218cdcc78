/** Types of coverage.mjs (a plain ESM module of the mutation command). */
export interface MutantCoverage {
  static: Record<string, number>
  perTest: Record<string, Record<string, number>>
}

export declare function addCoverage(into: MutantCoverage, from: MutantCoverage | undefined): MutantCoverage
export declare function coverageSwitchableText(text: string, name?: string): string | undefined
export declare function coverageSwitchable(dir: string): number
