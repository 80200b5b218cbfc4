/**
 * The headers of every page the api serves to browsers: the console (`/console`) and the API
 * reference (`/docs`, Swagger UI). Both share the origin where the console keeps its token in
 * localStorage, so both load only their own files from this origin: no inline script or style
 * (neither has any), no other host, no framing. Images may be data URLs (Swagger UI's icons) and
 * blob URLs (the inbox's images: their bytes need the token, so the console fetches them itself).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join('; ')

export const BROWSER_PAGE_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin'
}
