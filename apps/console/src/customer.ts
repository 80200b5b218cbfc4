/**
 * How the console names a customer and reaches them (README, Customers known by username): by their
 * phone when the platform shares it, else by their username (the platform withholds the phone of a
 * customer who set one), else by their platform user id.
 */
interface Customer {
  phone: string
  username: string | null
  platformUserId: string | null
}

export const customerLabel = (customer: Customer): string =>
  customer.phone !== '' ? `+${customer.phone}` : customer.username ?? customer.platformUserId ?? ''

/** The `to` of a send: the phone, else the platform user id (sent as the platform's `recipient`). */
export const customerAddress = (customer: Customer): string =>
  customer.phone !== '' ? customer.phone : customer.platformUserId ?? ''

/** What the contacts search finds the customer by: the phone's digits or the username. */
export const customerSearch = (customer: Customer): string =>
  customer.phone !== '' ? customer.phone : customer.username ?? ''

/** The contact is the conversation's customer: the same phone, or the same platform user id. */
export const sameCustomer = (contact: Customer, conversation: Customer): boolean =>
  (contact.phone !== '' && contact.phone === conversation.phone) || (contact.platformUserId !== null && contact.platformUserId === conversation.platformUserId)
