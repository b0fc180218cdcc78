export interface StoredResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/** An answer as the key's row keeps it: the request's fingerprint, and from when until when it is replayed. */
export interface StoredAnswer {
  workspaceId: string
  key: string
  fingerprint: string
  response: StoredResponse
  createdAt: number
  expiresAt: number
}

export type ClaimResult =
  | { kind: 'claimed' }
  | { kind: 'replay'; fingerprint: string; response: StoredResponse }
  | { kind: 'in_progress'; fingerprint: string }
