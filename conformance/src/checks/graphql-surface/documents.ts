/** GraphQL over HTTP: the request forms it takes and refuses, and the limits a document is held to. */
import { sameJson } from '../../canonical.js'
import type { Check } from '../../check.js'
import { expectStatus } from '../../fixtures.js'
import type { HttpResponse } from '../../http.js'
import { obj } from '../../http.js'
import { assert } from '../../types.js'
import { short } from '../../wait.js'
import { declaredSurface, gql } from '../graphql.js'
import { UNHELD_INTEGER } from '../validation.js'
import { answered, codeOf, dataOf, errorsOf, type Json, refused400, refusedDocument } from './answers.js'

export const httpRequestForms: Check = {
  id: 'graphql.http-request-forms',
  title:
    'GraphQL over HTTP: GET takes query and JSON variables; mutations over GET, subscriptions over HTTP, malformed requests and numbers no double holds are refused',
  level: 'profile',
  clauses: ['S4.15'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const get = (params: Record<string, string>) =>
      ctx.http.get(`${url}?${new URLSearchParams(params).toString()}`)
    const q = 'query($l: Int) { agents(limit: $l) { data { agent_id } next_cursor } }'
    const viaGet = await get({ query: q, variables: JSON.stringify({ l: 1 }) })
    const page = answered(viaGet, 'agents', 'GET /v1/graphql with variables')
    assert(
      Array.isArray(page.data) && page.data.length <= 1,
      `GET's agents(limit: 1) answered ${short(page)}`,
    )
    answered(await get({ query: '{ agents(limit: 1) { next_cursor } }' }), 'agents', 'GET without variables')
    answered(
      await get({ query: '{ agents(limit: 1) { next_cursor } }', variables: '' }),
      'agents',
      'GET with empty variables',
    )
    answered(
      await get({ query: '{ agents(limit: 1) { next_cursor } }', variables: 'null' }),
      'agents',
      'GET with variables null',
    )
    for (const [what, variables] of [
      ['variables that are no JSON', '{'],
      ['variables that are a JSON array', '[1]'],
      ['variables that are a JSON string', '"x"'],
    ] as const) {
      const res = await get({ query: q, variables })
      refused400(res, `GET with ${what}`, {
        message: 'variables must be a JSON object',
        location: 'query',
        path: 'variables',
      })
    }
    // A number the reference would keep other than as written (validation.numbers-kept-or-refused) is refused
    // wherever GraphQL's JSON arrives: in GET's variables (400 naming it) and in a JSON literal of the document.
    const unheld = await get({ query: q, variables: `{"l":${UNHELD_INTEGER}}` })
    refused400(unheld, `GET with variables holding ${UNHELD_INTEGER}`)
    const unheldDetail = obj(obj(obj(unheld.body).error).detail)
    assert(
      sameJson(unheldDetail.fields, ['variables.l']) &&
        Array.isArray(unheldDetail.issues) &&
        obj(unheldDetail.issues[0]).location === 'query',
      `GET with variables holding ${UNHELD_INTEGER}: ${short(unheld.body)} does not name variables.l in the query`,
    )
    const literal = refusedDocument(
      await gql(
        ctx.http,
        url,
        `mutation { startRun(agent_id: "agt_unheld", input: { inputs: { n: ${UNHELD_INTEGER} } }) { run_id } }`,
      ),
      `a JSON literal holding ${UNHELD_INTEGER}`,
    )
    assert(
      String(literal.message).includes(UNHELD_INTEGER),
      `a JSON literal holding ${UNHELD_INTEGER} was refused with ${short(literal.message)}, which does not name it`,
    )
    const mutation = await get({
      query: 'mutation { createAgent(input: { name: "via-get", behavior: autonomous }) { agent_id } }',
    })
    refused400(mutation, 'a mutation over GET', {
      message: 'Mutations must be sent with POST',
      location: 'query',
      path: 'query',
      issue: 'mutation over GET',
    })
    assert(/POST/.test(mutation.text), `a mutation over GET: ${short(mutation.body)} does not name POST`)
    const sub = await gql(ctx.http, url, 'subscription { runEvents { type } }')
    refused400(sub, 'a subscription over HTTP POST', {
      message: `Subscriptions use the graphql-ws protocol: open a WebSocket to /v1/graphql`,
      location: 'body',
      path: 'query',
      issue: 'subscription over HTTP',
    })
    assert(
      /graphql-ws/.test(sub.text),
      `a subscription over HTTP: ${short(sub.body)} does not name graphql-ws`,
    )
    const blank = 'query must be a non-empty GraphQL document'
    refused400(await get({ query: '   ' }), 'GET with a query of white space', {
      message: blank,
      location: 'query',
      path: 'query',
    })
    refused400(await ctx.http.post(url, { query: ' \n ' }), 'POST with a query of white space', {
      message: blank,
      location: 'body',
      path: 'query',
    })
    refused400(await ctx.http.post(url, [{ query: '{ __typename }' }]), 'POST with a JSON array body', {
      message: 'The body must be a JSON object with a "query" string',
      location: 'body',
      path: 'query',
    })
    const nullBody = await ctx.http.post(url, undefined, {
      rawBody: 'null',
      headers: { 'content-type': 'application/json' },
    })
    refused400(nullBody, 'POST with the JSON body null', {
      message: 'The body must be a JSON object with a "query" string',
      location: 'body',
      path: 'query',
    })
    const noString = await ctx.http.post(url, { query: 1 })
    refused400(noString, 'POST with a query that is no string')
    const issue = obj((obj(obj(obj(noString.body).error).detail).issues as unknown[] | undefined)?.[0])
    assert(
      issue.location === 'body' && issue.path === 'query',
      `POST with a query that is no string: the issue is ${short(issue)}, not at body.query`,
    )
    const raw = await ctx.http.post(url, undefined, {
      rawBody: '{"query": ',
      headers: { 'content-type': 'application/json' },
    })
    assert(raw.status === 400, `POST with a body that is no JSON answered ${raw.status}`)
    // operationName picks one of several operations; none or an unknown one is refused.
    const two = 'query A { agents(limit: 1) { next_cursor } } query B { __typename }'
    const picked = await ctx.http.post(url, { query: two, operationName: 'B' })
    expectStatus(picked, 200, 'POST with operationName B')
    assert(
      dataOf(picked).__typename === 'Query' && !('agents' in dataOf(picked)),
      `operationName B answered ${short(picked.body)}`,
    )
    const byGet = await get({ query: two, operationName: 'A' })
    assert('agents' in dataOf(byGet), `GET with operationName A answered ${short(byGet.body)}`)
    const unnamed = refusedDocument(await ctx.http.post(url, { query: two }), 'two operations, none named')
    assert(
      unnamed.message === 'The document holds several operations: name one with operationName',
      `two operations, none named: ${short(unnamed)}`,
    )
    const unknown = refusedDocument(
      await ctx.http.post(url, { query: two, operationName: 'C' }),
      'an unknown operationName',
    )
    assert(
      unknown.message === 'No operation named "C" in the document',
      `an unknown operationName: ${short(unknown)}`,
    )
    // Variables that do not fit their types: nothing executes, so there is no `data` at all.
    const badVar = await gql(ctx.http, url, q, { l: 'many' })
    expectStatus(badVar, 200, 'a variable of the wrong type')
    assert(
      !('data' in obj(badVar.body)) && codeOf(badVar) === 'invalid_request',
      `a variable of the wrong type answered ${short(badVar.body)}`,
    )
    // A resolver's refusal keeps the data of the others (null where refused) and its error's path.
    const partial = await gql(ctx.http, url, '{ __typename agents(limit: 0) { next_cursor } }')
    expectStatus(partial, 200, 'a query with one refused field')
    const first = errorsOf(partial)[0] ?? {}
    assert(
      dataOf(partial).__typename === 'Query' &&
        dataOf(partial).agents === null &&
        JSON.stringify(first.path) === '["agents"]' &&
        Array.isArray(first.locations),
      `a query with one refused field answered ${short(partial.body)}`,
    )
  },
}

export const documentLimits: Check = {
  id: 'graphql.document-limits',
  title:
    'A GraphQL document that does not parse or validate, nests too deep, holds too many tokens or unstorable text, or costs too much is refused before it runs',
  level: 'profile',
  clauses: ['S4.15'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const syntax = refusedDocument(await gql(ctx.http, url, '{ agents('), 'a document that does not parse')
    assert(
      Array.isArray(syntax.locations) && JSON.stringify(obj(syntax.extensions).detail) === '{}',
      `the syntax error has no locations or a detail other than {}: ${short(syntax)}`,
    )
    refusedDocument(await gql(ctx.http, url, '{ agents { nope } }'), 'a document selecting an unknown field')
    // Depth: run > agent > runs > data > agent > runs > ... (each object field a level).
    let nested = 'agent_id'
    for (let i = 0; i < 5; i++) nested = `runs(limit: 1) { data { agent { ${nested} } } }`
    const deep = refusedDocument(
      await gql(ctx.http, url, `query($id: ID!) { agent(id: $id) { ${nested} } }`, { id: 'agt_none' }),
      'a query nested 17 levels deep',
    )
    const depth = obj(obj(deep.extensions).detail)
    assert(
      depth.limit === 'depth' && depth.max === 12 && depth.observed === 17,
      `the depth refusal's detail is ${short(depth)}, not { limit: depth, observed: 17, max: 12 }`,
    )
    // Exactly 12 levels is allowed: agent (2), three times runs > data > agent (11), runs (12).
    let twelve = 'runs(limit: 1) { next_cursor }'
    for (let i = 0; i < 3; i++) twelve = `runs(limit: 1) { data { agent { ${twelve} } } }`
    const ok = await gql(ctx.http, url, `query($id: ID!) { agent(id: $id) { ${twelve} } }`, {
      id: 'agt_none',
    })
    assert(
      'data' in obj(ok.body) && errorsOf(ok).every((e) => obj(obj(e.extensions).detail).limit === undefined),
      `a query nested 12 levels deep was refused: ${short(ok.body)}`,
    )
    // The refusal names where the nesting went too deep: the document's line.
    const tooDeep = (res: HttpResponse, what: string) => {
      const e = refusedDocument(res, what)
      assert(
        obj(obj(e.extensions).detail).limit === 'max_json_depth' &&
          e.message === 'The JSON at query.line 1 nests deeper than 64 levels',
        `${what}: the refusal is ${short(e)}, not the JSON depth limit at query.line 1`,
      )
    }
    // { and ( are two levels: 63 brackets more make 65, past the 64 any JSON value may nest.
    const brackets = (n: number) => `{ agents(cursor: ${'['.repeat(n)}${']'.repeat(n)}) { next_cursor } }`
    tooDeep(await gql(ctx.http, url, brackets(63)), 'a list literal nested 65 deep')
    // The nesting count stops where the parser stops (5000 tokens): an opener past it is the parser's refusal.
    const past = (fields: number) =>
      `{ ${'__typename '.repeat(fields)}x(c: ${'['.repeat(63)}${']'.repeat(63)}) }`
    tooDeep(await gql(ctx.http, url, past(4932)), 'the 65th opener as the 5000th token')
    const beyond = refusedDocument(
      await gql(ctx.http, url, past(4933)),
      'the 65th opener as the 5001st token',
    )
    assert(
      /5000 tokens/.test(String(beyond.message)),
      `the 65th opener as the 5001st token: the refusal is ${short(beyond)}, not the parser's token limit`,
    )
    // Validation stops at 20 errors (and says so in a 21st).
    const many = await gql(ctx.http, url, `{ ${Array.from({ length: 25 }, (_, i) => `nope${i}`).join(' ')} }`)
    refusedDocument(many, '25 unknown fields')
    assert(errorsOf(many).length === 21, `25 unknown fields answered ${errorsOf(many).length} errors, not 21`)
    const shallow = refusedDocument(await gql(ctx.http, url, brackets(62)), 'a list literal nested 64 deep')
    assert(
      obj(obj(shallow.extensions).detail).limit === undefined,
      `a list literal nested 64 deep was refused by a limit: ${short(shallow)}`,
    )
    refusedDocument(
      await gql(
        ctx.http,
        url,
        `{ ${Array.from({ length: 2600 }, (_, i) => `a${i}: __typename`).join(' ')} }`,
      ),
      'a document of more than 5000 tokens',
    )
    const nul = refusedDocument(
      await gql(
        ctx.http,
        url,
        'mutation { createAgent(input: { name: "a\\u0000b", behavior: autonomous }) { agent_id } }',
      ),
      'a string literal holding U+0000',
    )
    assert(
      String(nul.message).startsWith('The request document is invalid: query: A string literal '),
      `the U+0000 literal's error is ${short(nul)}`,
    )
    // Introspection is served, and counted: GraphiQL-like introspection passes, 20 aliased copies do not.
    const intro =
      '__schema { types { name fields { name args { name type { name ofType { name } } } type { name kind ofType { name kind } } } } }'
    const once = await gql(ctx.http, url, `{ ${intro} }`)
    const schema = answered(once, '__schema', 'an introspection query')
    assert(
      Array.isArray(schema.types) && schema.types.length > 20,
      `__schema.types is ${short(schema.types)}`,
    )
    const flood = refusedDocument(
      await gql(ctx.http, url, `{ ${Array.from({ length: 20 }, (_, i) => `s${i}: ${intro}`).join(' ')} }`),
      '20 aliased introspection queries',
    )
    assert(
      obj(obj(flood.extensions).detail).limit === 'cost',
      `the introspection flood's refusal is ${short(flood)}`,
    )
    const typeFlood = refusedDocument(
      await gql(
        ctx.http,
        url,
        `{ ${Array.from({ length: 120 }, (_, i) => `t${i}: __type(name: "Run") { fields { name args { name } type { name } } interfaces { name } enumValues { name } inputFields { name } possibleTypes { name } }`).join(' ')} }`,
      ),
      '120 aliased __type queries',
    )
    assert(obj(obj(typeFlood.extensions).detail).limit === 'cost', `the __type flood: ${short(typeFlood)}`)
    // The cost: every object the answer may hold. A page field multiplies its selection by its limit (a literal or
    // a variable; 50 without one, 200 for one out of range), a page's data counts once, and a run's awaiting and
    // outcome.results count at most 25 each (the most steps any envelope allows a run).
    const runLists = 'data { awaiting { step_id } outcome { results { step_id } } }'
    const costs: [string, string, Json, number][] = [
      [
        '10 agents × 20 runs with their awaiting and results',
        `{ agents(limit: 10) { data { runs(limit: 20) { ${runLists} } } } }`,
        {},
        10 * (1 + 1 + 20 * (1 + 1 + 25 + 1 + 25)),
      ],
      [
        '60 agents (a variable) × 200 runs',
        'query($l: Int) { agents(limit: $l) { data { runs(limit: 200) { next_cursor } } } }',
        { l: 60 },
        60 * (1 + 1 + 200),
      ],
      [
        'agents with no limit × 200 runs',
        '{ agents { data { runs(limit: 200) { next_cursor } } } }',
        {},
        50 * (1 + 1 + 200),
      ],
      [
        'agents with an unset limit variable × 200 runs',
        'query($l: Int) { agents(limit: $l) { data { runs(limit: 200) { next_cursor } } } }',
        {},
        50 * (1 + 1 + 200),
      ],
      [
        'agents(limit: 0) × 200 runs (out of range: costed at 200)',
        '{ agents(limit: 0) { data { runs(limit: 200) { next_cursor } } } }',
        {},
        200 * (1 + 1 + 200),
      ],
      [
        'agents(limit: 201) × 200 runs (out of range: costed at 200)',
        '{ agents(limit: 201) { data { runs(limit: 200) { next_cursor } } } }',
        {},
        200 * (1 + 1 + 200),
      ],
      [
        'agents(limit: $l) with l = 201 × 200 runs',
        'query($l: Int) { agents(limit: $l) { data { runs(limit: 200) { next_cursor } } } }',
        { l: 201 },
        200 * (1 + 1 + 200),
      ],
      [
        'a fragment and an inline fragment of 60 agents × 200 runs, twice',
        'query { ...A ... on Query { b: agents(limit: 60) { data { runs(limit: 200) { next_cursor } } } } } fragment A on Query { agents(limit: 60) { data { runs(limit: 200) { next_cursor } } } }',
        {},
        2 * 60 * (1 + 1 + 200),
      ],
      [
        'a mutation selecting 200 runs × their agent × 200 runs (nothing runs)',
        'mutation { createAgent(input: { name: "never", behavior: autonomous }) { runs(limit: 200) { data { agent { runs(limit: 200) { next_cursor } } } } } }',
        {},
        1 + 200 * (1 + 1 + 1 + 200),
      ],
      [
        'agent(id) (arguments but no limit: once) × 200 runs × their trace(limit: 49)',
        '{ agent(id: "agt_x") { runs(limit: 200) { data { run_id trace(limit: 49) { next_cursor } } } } }',
        {},
        1 + 200 * (1 + 1 + 49),
      ],
      [
        '200 agents × runs(cursor: null, limit: 60) (the limit argument, not the first)',
        '{ agents(limit: 200) { data { runs(cursor: null, limit: 60) { next_cursor } } } }',
        {},
        200 * (1 + 1 + 60),
      ],
      [
        'agents(limit: 1) × 200 runs × their trace(limit: 200)',
        '{ agents(limit: 1) { data { runs(limit: 200) { data { trace(limit: 200) { next_cursor } } } } } }',
        {},
        1 * (1 + 1 + 200 * (1 + 1 + 200)),
      ],
    ]
    for (const [what, query, variables, want] of costs) {
      const refused = refusedDocument(await gql(ctx.http, url, query, variables), what)
      const detail = obj(obj(refused.extensions).detail)
      assert(
        sameJson(detail, { limit: 'cost', observed: want, max: 10000 }),
        `${what}: the refusal's detail is ${short(detail)}, not { limit: cost, observed: ${want}, max: 10000 }`,
      )
      assert(
        refused.message ===
          `The query may return ${want} objects; at most 10000 are allowed (lower the page limits or select less)`,
        `${what}: the refusal says ${short(refused.message)}`,
      )
    }
    // At and just under the limit ("at most 10000"): answered.
    for (const [what, query] of [
      [
        '50 agents × 198 runs (10000, the limit itself)',
        '{ agents(limit: 50) { data { runs(limit: 198) { next_cursor } } } }',
      ],
      ['49 agents × 200 runs (9898)', '{ agents(limit: 49) { data { runs(limit: 200) { next_cursor } } } }'],
      [
        '9 agents × 20 runs with their lists (9558)',
        `{ agents(limit: 9) { data { runs(limit: 20) { ${runLists} } } } }`,
      ],
    ] as const) {
      const res = await gql(ctx.http, url, query)
      assert('data' in obj(res.body) && errorsOf(res).length === 0, `${what} was refused: ${short(res.body)}`)
    }
  },
}

export const introspectionCost: Check = {
  id: 'graphql.introspection-cost',
  title:
    "Introspection is costed at the schema's own sizes: a flood of aliased introspection fields is refused with exactly that cost",
  level: 'profile',
  clauses: ['S4.15'],
  async run(ctx) {
    const url = declaredSurface(ctx)
    const shape = answered(
      await gql(
        ctx.http,
        url,
        `{ __schema { types { fields(includeDeprecated: true) { args(includeDeprecated: true) { name } }
          inputFields(includeDeprecated: true) { name } enumValues(includeDeprecated: true) { name }
          interfaces { name } possibleTypes { name } } directives { args(includeDeprecated: true) { name } } } }`,
      ),
      '__schema',
      'a full introspection of the list sizes',
    )
    const list = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj) : [])
    const types = list(shape.types)
    const directives = list(shape.directives)
    const sizes = (lists: Json[][]) => ({
      per: Math.max(0, ...lists.map((l) => l.length)),
      total: lists.reduce((n, l) => n + l.length, 0),
    })
    const fields = types.map((t) => list(t.fields))
    const T = types.length
    const F = sizes(fields)
    const A = sizes(fields.flat().map((f) => list(f.args)))
    const I = sizes(types.map((t) => list(t.inputFields)))
    const E = sizes(types.map((t) => list(t.enumValues)))
    const If = sizes(types.map((t) => list(t.interfaces)))
    const P = sizes(types.map((t) => list(t.possibleTypes)))
    const D = directives.length
    const DA = sizes(directives.map((d) => list(d.args)))
    // Under distinct parents a list holds at most the schema's total; under a type reference only per × count.
    const probes: [string, string, number][] = [
      [
        'types, their fields and args',
        '__schema { types { fields { args { name } } } }',
        1 + T + F.total + A.total,
      ],
      [
        'directives and their args, and the types',
        '__schema { directives { args { name } } types { name } }',
        1 + D + DA.total + T,
      ],
      [
        "types' input fields, enum values, interfaces, possible types",
        '__schema { types { inputFields { name } enumValues { name } interfaces { name } possibleTypes { name } } }',
        1 + T + I.total + E.total + If.total + P.total,
      ],
      [
        "a type's fields' types' fields",
        '__type(name: "Query") { fields { type { fields { name } } } }',
        1 + 2 * F.per + F.per * F.per,
      ],
    ]
    for (const [what, probe, cost] of probes) {
      const copies = Math.floor(10_000 / cost) + 1
      const query = `{ ${Array.from({ length: copies }, (_, i) => `p${i}: ${probe}`).join(' ')} }`
      const refused = refusedDocument(await gql(ctx.http, url, query), `${copies} copies of ${what}`)
      const detail = obj(obj(refused.extensions).detail)
      assert(
        detail.limit === 'cost' && detail.observed === copies * cost,
        `${copies} copies of ${what} (${cost} each by the schema's sizes) were refused with ${short(detail)}, not observed ${copies * cost}`,
      )
    }
  },
}
