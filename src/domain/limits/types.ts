export interface StoredResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export type ClaimResult =
  | { kind: 'claimed' }
  | { kind: 'replay'; fingerprint: string; response: StoredResponse }
  | { kind: 'in_progress'; fingerprint: string }
