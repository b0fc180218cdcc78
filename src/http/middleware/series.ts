import type { Context, Next } from 'hono'
import type { AppEnv } from '../../surface/context.js'

/**
 * A middleware step that runs in series with others inside one Hono layer: it calls `next` at most once, refuses
 * by throwing (the app's error handler renders the envelope), and never returns a Response: one that answers without
 * calling `next` (an idempotent replay) sets `c.res`, so whatever a step answers needs no passing back. On its fast path it need not be async: a step that
 * decides without waiting returns `next()`'s own promise. Unlike Hono's own layers, a later step's refusal comes
 * back through `next()` as a rejection, not as a rendered answer: a step with work after `next()` must do it then too.
 */
export type Step = (c: Context<AppEnv>, next: Next) => Promise<void>

/**
 * The steps as one Hono middleware, each step's `next` the step after it. Hono awaits every middleware layer in an
 * async dispatch of its own (a promise and an await per layer per request), and these steps always run together,
 * so they share one layer.
 */
export function inSeries(...steps: readonly Step[]): Step {
  return steps.reduceRight<Step>(
    (rest, step) => (c, next) => step(c, () => rest(c, next)),
    (_c, next) => next(),
  )
}
