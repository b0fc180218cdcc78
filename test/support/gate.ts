/** A promise held open until released: places a concurrent event exactly inside an await. */
export class Gate {
  private held: Promise<void> | undefined
  private open: (() => void) | undefined
  hold(): void {
    this.held = new Promise((resolve) => {
      this.open = resolve
    })
  }
  release(): void {
    this.open?.()
    this.held = undefined
  }
  /** Waits while the gate is held; at once when it is not (or was released already). */
  async pass(): Promise<void> {
    if (this.held) await this.held
  }
}
