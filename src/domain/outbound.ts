/** One POST the domain sends out (a webhook delivery, an `http` tool call). */
export interface OutboundPost {
  url: string
  headers: Record<string, string>
  body: string
  /** The whole attempt (connect, headers, body) must fit in this many ms. */
  timeoutMs: number
  /** Ends the attempt early (server shutdown). */
  signal?: AbortSignal
  /** Reads at most this much of the answer's body; the rest is discarded and `truncated` says so. */
  maxAnswerBytes: number
}

export type OutboundFailure = 'invalid_url' | 'private_address' | 'timeout' | 'aborted' | 'unreachable'

/** What came back: an answer with any status (redirects are never followed), or why there was none. */
export type OutboundAnswer =
  | {
      ok: true
      status: number
      body: string
      truncated: boolean
      /** The answer's headers, names in lower case (a repeated header's values joined with ", "). */
      headers?: Record<string, string>
    }
  | { ok: false; failure: OutboundFailure; message: string }

/**
 * The one way out of the server (src/outbound/http.ts). Unless the operator allows private targets, it connects
 * only to public addresses, checked after DNS resolution on the address actually connected to.
 */
export interface OutboundHttp {
  post(request: OutboundPost): Promise<OutboundAnswer>
  /** Why a URL given at registration can never be called (a literal private address, `localhost`), or null. */
  refusal(url: URL): string | null
}
