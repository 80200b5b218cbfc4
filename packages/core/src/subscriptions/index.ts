/** Outbound event subscriptions (README, Event subscriptions): the api's routes and the worker's deliveries. */
export { EVENT_CATALOGUE } from '../events/outbox.ts'
export { deliveryNotFound, subscriptionNotFound, subscriptionsRepository, SUBSCRIPTION_URL_MAX, type Delivery, type DeliveryAttempt, type Subscription, type SubscriptionsRepository } from './repository.ts'
export { deliveryRequeue, eventDeliverer, type DeliveryOutcome, type EventDeliverer } from './delivery.ts'
