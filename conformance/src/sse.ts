/** Server-sent events (text/event-stream) as the suite reads them: whole bodies, and bodies read as they arrive. */

/** Parses a text/event-stream body into its events. */
export function parseSse(text: string): Array<{ event: string; id?: string; data: string }> {
  return text
    .split(/\r?\n\r?\n/)
    .map((block) => {
      let event = 'message'
      let id: string | undefined
      const data: string[] = []
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(':') || line === '') continue
        const i = line.indexOf(':')
        const field = i < 0 ? line : line.slice(0, i)
        const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '')
        if (field === 'event') event = value
        else if (field === 'id') id = value
        else if (field === 'data') data.push(value)
      }
      return { event, ...(id !== undefined ? { id } : {}), data: data.join('\n') }
    })
    .filter((e) => e.data !== '' || e.event !== 'message')
}

/**
 * The events complete at the start of a text/event-stream text read so far, each with the blank line that ends it
 * (LF or CRLF), and the text after them, which the next bytes complete.
 */
export function completeSseEvents(text: string): { events: string[]; rest: string } {
  const events: string[] = []
  const blankLine = /\r?\n\r?\n/g
  let from = 0
  for (let m = blankLine.exec(text); m !== null; m = blankLine.exec(text)) {
    events.push(text.slice(from, blankLine.lastIndex))
    from = blankLine.lastIndex
  }
  return { events, rest: text.slice(from) }
}
