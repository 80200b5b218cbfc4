import fc, { type Arbitrary } from 'fast-check'
import type { JsonSchema } from './openapi.ts'

/** Nesting of generated values; deeper bodies are another test's subject (README, Security: bounded JSON depth). */
const MAX_DEPTH = 50

/** Values that reach deeper than random text would, by field name: a real token, a real phone number id. */
export type Samples = Record<string, readonly unknown[]>

/** Characters that break naive code: NUL and controls, lone surrogates, BOM, bidi override, line separators, quoting. */
const oddCharacter = fc.constantFrom(
  '\u0000', '\u0001', '\u001f', '\u007f', '\ud800', '\udbff', '\udc00', '\udfff', '\ufeff', '\ufffe', '\uffff',
  '\u202e', '\u2028', '"', '\'', '\\', '%', '{', '}', '$', '<', '\n', '\r'
)
const anyCharacter = fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), oddCharacter)

const notableStrings = fc.constantFrom(
  '', ' ', '\u0000', 'a\u0000b', '\ud800', 'x\udc00y', '\ud83d\ude00', '__proto__', 'constructor', 'prototype',
  'null', 'NaN', '-1', '1e999', '0x10', '\' OR \'1\'=\'1', '"; drop table users; --', '{{triggerData}}', '{{7*7}}', '#{7*7}',
  '../../etc/passwd', 'http://169.254.169.254/latest/meta-data/', '<script>alert(1)</script>', '%00', '%ED%A0%80'
)

/** Text an attacker would send; `longest` bounds the long ones (URLs and headers hold less than bodies). */
export function hostileString (longest: number): Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: anyCharacter, maxLength: 40 }) },
    { weight: 2, arbitrary: notableStrings },
    { weight: 1, arbitrary: fc.integer({ min: Math.min(256, longest), max: longest }).map((length) => 'x'.repeat(length)) }
  )
}

const notableNumbers = fc.constantFrom(0, -0, -1, 0.5, 1e308, -1e308, 2 ** 31, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER)

const deeplyNested = fc.tuple(fc.integer({ min: 2, max: MAX_DEPTH }), fc.boolean(), fc.jsonValue({ maxDepth: 1 }))
  .map(([depth, asArrays, leaf]) => {
    let value: unknown = leaf
    for (let level = 0; level < depth; level++) value = asArrays ? [value] : { a: value }
    return value
  })

/** Wide rather than deep: up to ~400 KiB of JSON, under the 1 MiB body limit. */
const wide = fc.oneof(
  fc.integer({ min: 1_000, max: 60_000 }).map((length) => Array.from({ length }, (_, i) => i)),
  fc.integer({ min: 1_000, max: 20_000 }).map((keys) => Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, i])))
)

/** An object of these own keys, `__proto__` and `constructor` included (assignment would set the prototype instead). */
function ownKeyed (entries: Iterable<[string, unknown]>): Record<string, unknown> {
  const object: Record<string, unknown> = {}
  for (const [key, value] of entries) Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
  return object
}

const oddKeyed = fc.array(fc.tuple(hostileString(64), fc.jsonValue({ maxDepth: 2 })), { maxLength: 5 }).map(ownKeyed)

/** Any JSON value meant to be refused: wrong types, odd text, huge, deep or wide. */
export const hostileValue: Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileString(300_000) },
  { weight: 1, arbitrary: notableNumbers },
  { weight: 1, arbitrary: fc.constantFrom(true, false, null) },
  { weight: 1, arbitrary: deeplyNested },
  { weight: 1, arbitrary: wide },
  { weight: 1, arbitrary: oddKeyed },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) }
)

function conformingString (schema: JsonSchema): Arbitrary<string> {
  const minLength = schema.minLength ?? 0
  const maxLength = schema.maxLength ?? Number.MAX_SAFE_INTEGER
  const fits = (text: string): boolean => text.length >= minLength && text.length <= maxLength
  if (schema.pattern !== undefined) return fc.stringMatching(new RegExp(schema.pattern)).filter(fits)
  if (schema.format === 'email') return fc.emailAddress().filter(fits)
  if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((date) => date.toISOString())
  return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(maxLength, 40)) })
}

function conformingOfType (type: string, schema: JsonSchema, samples: Samples): Arbitrary<unknown> {
  switch (type) {
    case 'null': return fc.constant(null)
    case 'boolean': return fc.boolean()
    case 'integer': return fc.integer({ min: schema.minimum ?? -1_000, max: schema.maximum ?? 1_000 })
    case 'number': return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true })
    case 'string': return conformingString(schema)
    case 'array': return fc.array(conforming(schema.items ?? {}, samples), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) })
    default: return objectOf(schema, samples, conforming, false)
  }
}

/** A value the schema accepts; a field named in `samples` is often given one of those. */
export function conforming (schema: JsonSchema, samples: Samples, name?: string): Arbitrary<unknown> {
  const generic = ((): Arbitrary<unknown> => {
    if (schema.const !== undefined) return fc.constant(schema.const)
    if (schema.enum !== undefined) return fc.constantFrom(...schema.enum)
    if (schema.anyOf !== undefined) return fc.oneof(...schema.anyOf.map((branch) => conforming(branch, samples)))
    const types = schema.type === undefined ? [] : [schema.type].flat()
    if (schema.nullable === true) types.push('null')
    if (types.length === 0) return schema.properties === undefined ? fc.jsonValue({ maxDepth: 3 }) : objectOf(schema, samples, conforming, false)
    return fc.oneof(...types.map((type) => conformingOfType(type, schema, samples)))
  })()
  const known = name === undefined ? undefined : samples[name]
  return known === undefined ? generic : fc.oneof(fc.constantFrom(...known), generic)
}

type Child = (schema: JsonSchema, samples: Samples, name?: string) => Arbitrary<unknown>

/** An object of the schema's fields made by `child`; `loose` may drop required ones and add unknown ones. */
function objectOf (schema: JsonSchema, samples: Samples, child: Child, loose: boolean): Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {}
  if (Object.keys(properties).length === 0) {
    return fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 })
  }
  const fields = Object.fromEntries(Object.entries(properties).map(([key, property]) => [key, child(property, samples, key)]))
  const required = schema.required ?? []
  if (!loose) return fc.record(fields, { requiredKeys: required })
  return fc.tuple(
    fc.boolean().chain((keepRequired) => fc.record(fields, { requiredKeys: keepRequired ? required : [] })),
    fc.option(oddKeyed, { nil: undefined })
  ).map(([known, unknown]) => ownKeyed([...Object.entries(unknown ?? {}), ...Object.entries(known)]))
}

/** The schema's own shape, with a wrong, missing or extra part here and there. */
export function nearMiss (schema: JsonSchema, samples: Samples, name?: string): Arbitrary<unknown> {
  const shaped = ((): Arbitrary<unknown> => {
    if (schema.properties !== undefined) return objectOf(schema, samples, nearMiss, true)
    if (schema.items !== undefined) return fc.array(nearMiss(schema.items, samples), { maxLength: 5 })
    return conforming(schema, samples, name)
  })()
  return fc.oneof({ weight: 5, arbitrary: shaped }, { weight: 1, arbitrary: hostileValue })
}
