/** One fixed window a request is counted in: its start (epoch ms), its length and its quota. */
export interface CounterWindow {
  name: string
  start: number
  windowMs: number
  quota: number
}
