/**
 * How the suite makes a run whose plan calls given tools. The spec does not say how a plan is chosen: §2 gives an
 * agent `capabilities` ("List of enabled capabilities") and a run free-form `inputs` ("Free-form input values for
 * the agent"), and nothing ties either to the tools a run calls. So a deployment declares it (`toolRun` in
 * --config); the default is the reference profile's way, an agent whose capabilities name the tools and the spec's
 * own example start body.
 */

export type Json = Record<string, unknown>

export interface ToolRef {
  id: string
  name: string
}

/** The agent create body and the run start body of a run that calls tools, with placeholders (see `fill`). */
export interface ToolRunDeclaration {
  agent: Json
  run: Json
}

/** Spec §2's run start body as its example request shows it. */
export function specRunBody(): Json {
  return { inputs: { period: '2026-Q3', scope: ['conformance'] }, mode: 'live', trace_level: 'detailed' }
}

export const DEFAULT_TOOL_RUN: ToolRunDeclaration = {
  agent: { name: '{name}', behavior: '{behavior}', capabilities: '{tools}' },
  run: specRunBody(),
}

/** Placeholders that name the tools; a declaration that uses none cannot make a run call a given tool. */
export const TOOL_PLACEHOLDERS = ['{tools}', '{tool_ids}', '{tool}', '{tool_id}']

export function mentionsTools(template: unknown): boolean {
  const text = JSON.stringify(template)
  return TOOL_PLACEHOLDERS.some((p) => text.includes(p))
}

export interface FillValues {
  name: string
  behavior: string
  tools: ToolRef[]
}

/**
 * The template with its placeholders filled in: a string that is exactly "{tools}" or "{tool_ids}" becomes the
 * array of the tools' names or ids (in plan order, repeats kept); "{name}", "{behavior}", "{tool}" and "{tool_id}"
 * (the first tool) are replaced inside any string.
 */
export function fill(template: unknown, values: FillValues): unknown {
  if (template === '{tools}') return values.tools.map((t) => t.name)
  if (template === '{tool_ids}') return values.tools.map((t) => t.id)
  if (typeof template === 'string')
    return template
      .replaceAll('{name}', values.name)
      .replaceAll('{behavior}', values.behavior)
      .replaceAll('{tool}', values.tools[0]?.name ?? '')
      .replaceAll('{tool_id}', values.tools[0]?.id ?? '')
  if (Array.isArray(template)) return template.map((v) => fill(v, values))
  if (template !== null && typeof template === 'object')
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fill(v, values)]))
  return template
}
