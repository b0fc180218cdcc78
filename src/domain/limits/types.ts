export interface StoredResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export type ClaimResult =
  | { kind: 'claimed' }
  | { kind: 'replay'; fingerprint: string; response: StoredResponse }
  | { kind: 'in_progress'; fingerprint: string }

/** One fixed window a request is counted in: its start (epoch ms), its length and its quota. */
export interface CounterWindow {
  name: string
  start: number
  windowMs: number
  quota: number
}
