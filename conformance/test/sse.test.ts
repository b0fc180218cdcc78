import { describe, expect, it } from 'vitest'
import { completeSseEvents, parseSse } from '../src/sse.js'

describe('an event stream read as it arrives', () => {
  it('gives the events a text completes, LF or CRLF, and keeps the rest for the next bytes', () => {
    const body =
      'id: 1\nevent: frame\ndata: {"seq":1}\n\nid: 2\r\nevent: frame\r\ndata: {"seq":2}\r\n\r\nevent: end\ndata: {}\n\n'
    // Every way of cutting the body in two reads back the same events, whole.
    for (let cut = 0; cut <= body.length; cut++) {
      const first = completeSseEvents(body.slice(0, cut))
      const second = completeSseEvents(first.rest + body.slice(cut))
      const events = [...first.events, ...second.events]
      expect(events.join('')).toBe(body)
      expect(second.rest).toBe('')
      expect(events).toHaveLength(3)
      expect(parseSse(events.join('')).map((e) => [e.event, e.id, e.data])).toEqual([
        ['frame', '1', '{"seq":1}'],
        ['frame', '2', '{"seq":2}'],
        ['end', undefined, '{}'],
      ])
    }
  })
})
