/**
 * The parts of Stryker's JSON report (mutation-testing-report-schema) the mutation run's own tests build and read:
 * places count lines and columns from 1.
 */
export interface Position {
  line: number
  column: number
}
export interface Location {
  start: Position
  end: Position
}
export interface ReportMutant {
  id: string
  mutatorName: string
  replacement: string
  status: string
  statusReason?: string
  location: Location
  /** Set on a mutant a second pass detected: its id there (stores.mjs mergeSecondPass). */
  secondId?: string
}
export interface Report {
  files: Record<string, { language: string; source: string; mutants: ReportMutant[] }>
  schemaVersion?: string
}
