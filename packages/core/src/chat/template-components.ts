import { DomainError } from '../errors.ts'
import { renderTemplate, templatePaths, templateProblem } from '../engine/template.ts'
import { parsePath, placeholders } from '../engine/template-syntax.ts'
import { MEDIA_LIMITS } from './client.ts'

/**
 * The parameters of a template send (README, Chat: template parameters): header media, body
 * variables and buttons, in the platform's wire format for template components. Our API names
 * the button component `buttons` (README, Chat); the platform's is `button`, with its index as text.
 */
export const TEMPLATE_PARAMETER_LIMITS = {
  components: 20,
  parametersPerComponent: 100,
  /** A body (or footer) variable: the platform's bound of a template's whole body. */
  bodyText: 1024,
  /** A header variable: the platform's bound of a header. */
  headerText: 60,
  /** A URL button's dynamic suffix: the platform's bound of a button's URL. */
  urlSuffix: 2000,
  /** A quick reply's payload: what a tap carries back as its id, bounded like a reply button's id. */
  payload: 256,
  /** A copy-code button's coupon code: the platform's bound. */
  couponCode: 15,
  /** A named parameter's name, and a location header's name or address. */
  parameterName: 100,
  locationText: 1000,
  /** What one recipient's components may render to, as JSON: a broadcast renders them per contact. */
  renderedBytes: 32_768
} as const

const MEDIA_PARAMETERS = ['image', 'video', 'document'] as const
const BUTTON_SUB_TYPES = ['url', 'quick_reply', 'copy_code'] as const
/** The one parameter each button kind takes: a URL's suffix, a quick reply's payload, a copy-code button's code. */
const BUTTON_PARAMETER: Record<typeof BUTTON_SUB_TYPES[number], { type: string, max: number }> = {
  url: { type: 'text', max: TEMPLATE_PARAMETER_LIMITS.urlSuffix },
  quick_reply: { type: 'payload', max: TEMPLATE_PARAMETER_LIMITS.payload },
  copy_code: { type: 'coupon_code', max: TEMPLATE_PARAMETER_LIMITS.couponCode }
}
/** The platform's limit of buttons on one template. */
const MAX_BUTTON_INDEX = 9

/** What a broadcast's placeholders may read: the recipient's contact (README, Broadcasts). */
const CONTACT_FIELDS = 'contact.name, contact.phone and contact.attributes.<name>'

/** The contact a broadcast's parameters are rendered from: the recipient's, or only its phone when it has none. */
export interface TemplateContact {
  phone: string
  name: string | null
  attributes: Record<string, string>
}

type Json = Record<string, unknown>

const invalid = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)
const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)
const hasPlaceholder = (value: unknown): value is string => typeof value === 'string' && placeholders(value).length > 0

/**
 * The checks of one components list. `templates`: a broadcast's, whose strings may hold contact
 * placeholders rendered at send (their values are checked then); otherwise every value is final.
 */
class ComponentsCheck {
  constructor (private readonly templates: boolean) {}

  /** Text of 1 to `max` characters, not blank (a template that rendered nothing is never sent); a number is its text. */
  text (value: unknown, field: string, max: number): string {
    if (this.templates && hasPlaceholder(value)) return this.placeholders(value, field)
    if (value === undefined || value === null || value === '') throw invalid(`${field} needs a value: a template parameter is never sent blank`)
    const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value
    if (typeof text !== 'string') throw invalid(`${field} must be text`)
    if (text.trim() === '') throw invalid(`${field} needs a value: a template parameter is never sent blank`)
    if (text.length > max) throw invalid(`${field} must be at most ${max} characters`)
    return text
  }

  number (value: unknown, field: string): number | string {
    if (this.templates && hasPlaceholder(value)) return this.placeholders(value, field)
    if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(`${field} must be a number`)
    return value
  }

  private placeholders (value: string, field: string): string {
    const problem = templateProblem(value)
    if (problem !== undefined) throw invalid(`${field}: ${problem}`)
    for (const { path } of placeholders(value)) {
      const [root, name, attribute, ...rest] = parsePath(path)
      const known = root === 'contact' && rest.length === 0 &&
        (((name === 'name' || name === 'phone') && attribute === undefined) || (name === 'attributes' && attribute !== undefined))
      if (!known) throw invalid(`${field}: {{${path}}} is not a contact field: a broadcast fills ${CONTACT_FIELDS}`)
    }
    return value
  }

  private media (kind: typeof MEDIA_PARAMETERS[number], value: unknown, field: string): Json {
    if (!isRecord(value)) throw invalid(`${field} must be an object with a link`)
    if ((value.link === undefined) === (value.id === undefined)) throw invalid(`${field} needs one of link and id`)
    let source: Json
    if (value.link !== undefined) {
      const link = this.text(value.link, `${field}.link`, MEDIA_LIMITS.link)
      if (!(this.templates && hasPlaceholder(link)) && (!URL.canParse(link) || new URL(link).protocol !== 'https:')) throw invalid(`${field}.link must be an https URL: the platform fetches it`)
      source = { link }
    } else {
      source = { id: this.text(value.id, `${field}.id`, MEDIA_LIMITS.mediaId) }
    }
    if (value.filename !== undefined && kind !== 'document') throw invalid(`${field}.filename is for a document only`)
    return { ...source, ...(value.filename !== undefined && { filename: this.text(value.filename, `${field}.filename`, MEDIA_LIMITS.filename) }) }
  }

  /** A header's or body's parameter, as the platform takes it; unknown keys are dropped. */
  private parameter (parameter: unknown, field: string, place: 'header' | 'body'): Json {
    if (!isRecord(parameter)) throw invalid(`${field} must be an object with a type`)
    const type = parameter.type
    const name = parameter.parameter_name === undefined ? {} : { parameter_name: this.text(parameter.parameter_name, `${field}.parameter_name`, TEMPLATE_PARAMETER_LIMITS.parameterName) }
    if (type === 'text') return { type, ...name, text: this.text(parameter.text, `${field}.text`, place === 'header' ? TEMPLATE_PARAMETER_LIMITS.headerText : TEMPLATE_PARAMETER_LIMITS.bodyText) }
    if (place === 'header' && MEDIA_PARAMETERS.includes(type as never)) {
      const kind = type as typeof MEDIA_PARAMETERS[number]
      return { type: kind, [kind]: this.media(kind, parameter[kind], `${field}.${kind}`) }
    }
    if (place === 'header' && type === 'location') {
      const location = parameter.location
      if (!isRecord(location)) throw invalid(`${field}.location must be an object with latitude and longitude`)
      return {
        type,
        location: {
          latitude: this.number(location.latitude, `${field}.location.latitude`),
          longitude: this.number(location.longitude, `${field}.location.longitude`),
          ...(location.name !== undefined && { name: this.text(location.name, `${field}.location.name`, TEMPLATE_PARAMETER_LIMITS.locationText) }),
          ...(location.address !== undefined && { address: this.text(location.address, `${field}.location.address`, TEMPLATE_PARAMETER_LIMITS.locationText) })
        }
      }
    }
    if (place === 'body' && type === 'currency') {
      const currency = parameter.currency
      if (!isRecord(currency)) throw invalid(`${field}.currency must be an object with fallback_value, code and amount_1000`)
      if (typeof currency.code !== 'string' || !/^[A-Z]{3}$/.test(currency.code)) throw invalid(`${field}.currency.code must be an ISO 4217 code such as USD`)
      if (!Number.isInteger(currency.amount_1000)) throw invalid(`${field}.currency.amount_1000 must be an integer`)
      return { type, ...name, currency: { fallback_value: this.text(currency.fallback_value, `${field}.currency.fallback_value`, TEMPLATE_PARAMETER_LIMITS.bodyText), code: currency.code, amount_1000: currency.amount_1000 } }
    }
    if (place === 'body' && type === 'date_time') {
      const dateTime = parameter.date_time
      if (!isRecord(dateTime)) throw invalid(`${field}.date_time must be an object with fallback_value`)
      return { type, ...name, date_time: { fallback_value: this.text(dateTime.fallback_value, `${field}.date_time.fallback_value`, TEMPLATE_PARAMETER_LIMITS.bodyText) } }
    }
    const types = place === 'header' ? 'text, image, video, document or location' : 'text, currency or date_time'
    throw invalid(`${field}.type must be ${types} in a ${place}`)
  }

  private parameters (value: unknown, field: string, place: 'header' | 'body'): Json[] {
    const max = place === 'header' ? 1 : TEMPLATE_PARAMETER_LIMITS.parametersPerComponent
    if (!Array.isArray(value) || value.length === 0 || value.length > max) throw invalid(`${field}.parameters must hold ${max === 1 ? 'one parameter' : `1 to ${max} parameters`}`)
    return value.map((parameter, i) => this.parameter(parameter, `${field}.parameters[${i}]`, place))
  }

  private button (component: Json, field: string): Json {
    const subType = typeof component.sub_type === 'string' ? component.sub_type.toLowerCase() : component.sub_type
    if (!BUTTON_SUB_TYPES.includes(subType as never)) throw invalid(`${field}.sub_type must be one of ${BUTTON_SUB_TYPES.join(', ')}`)
    const index = Number(component.index)
    if ((typeof component.index !== 'number' && typeof component.index !== 'string') || component.index === '' || !Number.isInteger(index) || index < 0 || index > MAX_BUTTON_INDEX) {
      throw invalid(`${field}.index must be the button's position, 0 to ${MAX_BUTTON_INDEX}`)
    }
    const expected = BUTTON_PARAMETER[subType as typeof BUTTON_SUB_TYPES[number]]
    const parameters = component.parameters
    if (!Array.isArray(parameters) || parameters.length !== 1) throw invalid(`${field}.parameters must hold the button's one parameter`)
    const parameter: unknown = parameters[0]
    const at = `${field}.parameters[0]`
    if (!isRecord(parameter) || parameter.type !== expected.type) throw invalid(`${at}.type must be ${expected.type} for a ${String(subType)} button`)
    return { type: 'button', sub_type: subType, index: String(index), parameters: [{ type: expected.type, [expected.type]: this.text(parameter[expected.type], `${at}.${expected.type}`, expected.max) }] }
  }

  components (value: unknown, field: string): Json[] {
    const { components: max } = TEMPLATE_PARAMETER_LIMITS
    if (!Array.isArray(value) || value.length > max) throw invalid(`${field} must be a list of at most ${max} components`)
    return value.map((component: unknown, i) => {
      const at = `${field}[${i}]`
      if (!isRecord(component)) throw invalid(`${at} must be an object with a type`)
      const type = typeof component.type === 'string' ? component.type.toLowerCase() : component.type
      if (type === 'header') return { type, parameters: this.parameters(component.parameters, at, 'header') }
      if (type === 'body' || type === 'footer') return { type, parameters: this.parameters(component.parameters, at, 'body') }
      if (type === 'buttons' || type === 'button') return this.button(component, at)
      throw invalid(`${at}.type must be header, body, footer or buttons`)
    })
  }
}

/**
 * A send's components, checked before the platform is called (a 400 naming the field) and
 * written as the platform takes them.
 */
export const checkTemplateComponents = (components: unknown, field = 'components'): Json[] => new ComponentsCheck(false).components(components, field)

/**
 * A broadcast's components when it is created: their shape, and placeholders that read only the
 * recipient's contact. Returned as given: they are rendered and checked again at each send.
 */
export function checkBroadcastComponents (components: unknown, field: string): void {
  new ComponentsCheck(true).components(components, field)
}

/**
 * One recipient's components, rendered from its contact when they hold placeholders. A
 * placeholder that resolves to nothing or blank fails the recipient, naming the parameter and the
 * field (`components[0].parameters[1]: contact.attributes.plan has no value`): a blank is never
 * sent. The rendered components are bounded by `renderedBytes`.
 */
export function renderForContact (components: unknown[], contact: TemplateContact): { components: unknown[] } | { problem: string } {
  if (templatePaths(components).length === 0) return { components }
  const scope = { contact }
  try {
    for (const [i, component] of components.entries()) {
      const parameters = isRecord(component) && Array.isArray(component.parameters) ? component.parameters : []
      for (const [j, parameter] of parameters.entries()) {
        for (const { path, start, end, text } of placeholdersIn(parameter)) {
          const value = renderTemplate(text.slice(start, end), scope)
          if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
            return { problem: `components[${i}].parameters[${j}]: ${path} has no value` }
          }
        }
      }
    }
    return { components: renderTemplate(components, scope, undefined, { maxBytes: TEMPLATE_PARAMETER_LIMITS.renderedBytes }) as unknown[] }
  } catch (err) {
    // The renderer's own refusals (a filter's bad input, the size bound) name no field: say where.
    return { problem: `components, rendered for this contact: ${(err as Error).message}` }
  }
}

/** Every placeholder in the strings of a value, with the string that holds it. */
function placeholdersIn (value: unknown): Array<ReturnType<typeof placeholders>[number] & { text: string }> {
  if (typeof value === 'string') return placeholders(value).map((found) => ({ ...found, text: value }))
  if (Array.isArray(value)) return value.flatMap(placeholdersIn)
  if (isRecord(value)) return Object.values(value).flatMap(placeholdersIn)
  return []
}
