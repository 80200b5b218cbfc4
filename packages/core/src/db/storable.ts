/**
 * PostgreSQL text cannot hold U+0000, and jsonb refuses U+0000 and unpaired
 * UTF-16 surrogates (`\ud800` alone), although both are valid in JSON and in
 * JavaScript strings. Data from outside (webhook payloads, HTTP responses)
 * carries them sometimes; these helpers keep such a value from failing its
 * statement by replacing them with U+FFFD, the replacement character.
 */

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/**
 * JSON.stringify writes U+0000 as `\u0000` and an unpaired surrogate as
 * `\udXXX` (paired ones stay raw characters), so in its output every such
 * escape stands for an unstorable character. The backslashes before it must
 * be an even run, or the `\u` is literal text.
 */
const UNSTORABLE_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g

/** `text` with U+0000 and unpaired surrogates replaced by U+FFFD. */
export function storableText (text: string): string {
  return text.replaceAll('\0', '\ufffd').replace(UNPAIRED_SURROGATE, '\ufffd')
}

/** `value` as JSON text for a jsonb parameter, every string and key made storable. */
export function storableJson (value: unknown): string {
  const json = JSON.stringify(value ?? null)
  return json.includes('\\u') ? json.replace(UNSTORABLE_ESCAPE, '$1\\ufffd') : json
}
