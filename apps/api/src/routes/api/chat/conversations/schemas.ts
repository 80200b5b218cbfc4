import { Type, type TString } from 'typebox'
import { CONVERSATION_FILTERS, CONVERSATION_SORTS, LABEL_BOUNDS, NOTE_BOUNDS } from '@switchboard/core/chat'
import { AI_MODES, ASSISTANT_TURN_OUTCOMES, ASSISTANT_TURN_STATUSES, CONVERSATION_PRIORITIES, DRAFT_DECISIONS, DRAFT_STATUSES, MESSAGE_DIRECTIONS, MESSAGE_SENDER_TYPES, MESSAGE_STATUSES } from '@switchboard/core/db'
import { NullableTimestamp, Pagination, Timestamp } from '../../../../schemas/common.ts'

const nullable = <T extends TString>(schema: T) => Type.Union([schema, Type.Null()])

export const ChatMessage = Type.Object({
  id: Type.String(),
  wamid: nullable(Type.String()),
  direction: Type.Enum(MESSAGE_DIRECTIONS),
  type: Type.String(),
  content: Type.String(),
  templateContent: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  /** Media messages: the platform's media id (its bytes at `GET /api/chat/messages/:id/media`) or the link it was sent from. */
  media: Type.Union([Type.Object({
    id: Type.Optional(Type.String()),
    link: Type.Optional(Type.String()),
    mimeType: Type.Optional(Type.String()),
    caption: Type.Optional(Type.String()),
    filename: Type.Optional(Type.String()),
    sha256: Type.Optional(Type.String())
  }), Type.Null()]),
  status: Type.Union([Type.Enum([...MESSAGE_STATUSES, ...DRAFT_STATUSES]), Type.Null()]),
  agentId: nullable(Type.String()),
  agentName: nullable(Type.String()),
  /**
   * Who sent an outbound message (README, The team inbox: who sent a message): `user` (id: the user's), `assistant` (the
   * turn's), `workflow` (the workflow's, with `runId`), `broadcast` (the broadcast's), `consent` (`optOut` or `optIn`).
   * Null on inbound messages and on outbound ones stored before it was recorded.
   */
  sender: Type.Union([Type.Object({
    type: Type.Enum(MESSAGE_SENDER_TYPES),
    id: Type.String(),
    runId: Type.Optional(Type.String())
  }), Type.Null()]),
  replyToId: nullable(Type.String()),
  /** What a message of another kind carries (README, Flows): a completed flow, a shared location; a draft's knowledge sources. */
  details: Type.Optional(Type.Union([Type.Object({
    flowReply: Type.Optional(Type.Object({
      name: Type.Optional(Type.String()),
      body: Type.Optional(Type.String()),
      response: Type.Object({}, { additionalProperties: true }),
      unreadable: Type.Optional(Type.Enum(['too_large', 'too_deep', 'not_json']))
    })),
    location: Type.Optional(Type.Object({
      latitude: Type.Number(),
      longitude: Type.Number(),
      name: Type.Optional(Type.String()),
      address: Type.Optional(Type.String()),
      url: Type.Optional(Type.String())
    })),
    /** An assistant's draft: the knowledge passages its answer was based on (README, Knowledge). */
    sources: Type.Optional(Type.Array(Type.Object({ sourceId: Type.String(), title: Type.String(), heading: Type.String(), page: Type.Union([Type.Integer(), Type.Null()]) })))
  }, { additionalProperties: true }), Type.Null()])),
  /** The message this one quotes (README, Message kinds: quoted replies); null when none, or not a message of the conversation, or on drafts. */
  replyTo: Type.Union([Type.Object({ id: Type.String(), content: Type.String(), type: Type.String(), direction: Type.Enum(MESSAGE_DIRECTIONS) }), Type.Null()]),
  /** A `location` message's place. */
  location: Type.Union([Type.Object({
    latitude: Type.Number(),
    longitude: Type.Number(),
    name: Type.Optional(Type.String()),
    address: Type.Optional(Type.String()),
    url: Type.Optional(Type.String())
  }), Type.Null()]),
  /** A `contacts` message's cards, in the platform's format (`name.formatted_name`, `phones[]`…). */
  contacts: Type.Union([Type.Array(Type.Record(Type.String(), Type.Unknown())), Type.Null()]),
  /** A `reaction` message's target (our id, null when not a message of the conversation; its wamid) and emoji ("" when removed). */
  reaction: Type.Union([Type.Object({ messageId: nullable(Type.String()), wamid: Type.String(), emoji: Type.String() }), Type.Null()]),
  /** The emoji the customer and the business put on this message. */
  reactions: Type.Union([Type.Object({ customer: Type.Optional(Type.String()), business: Type.Optional(Type.String()) }), Type.Null()]),
  /** Failed only: why the platform failed it. */
  error: Type.Union([Type.Object({ code: Type.Union([Type.Integer(), Type.Null()]), title: Type.String(), details: nullable(Type.String()) }), Type.Null()]),
  createdAt: Timestamp
})

const conversationFields = {
  id: Type.String(),
  /** "" when the platform withholds it: then platformUserId names the customer, username shows them (README, Customers known by username). */
  phone: Type.String(),
  platformUserId: nullable(Type.String()),
  username: nullable(Type.String()),
  name: nullable(Type.String()),
  lastMessage: nullable(Type.String()),
  lastMessageAt: NullableTimestamp,
  unreadCount: Type.Integer(),
  isPinned: Type.Boolean(),
  isArchived: Type.Boolean(),
  priority: Type.String(),
  labels: Type.Array(Type.String()),
  assignedAgentId: nullable(Type.String()),
  aiMode: Type.Enum(AI_MODES),
  pendingApprovalCount: Type.Integer(),
  /** A staff reply or an assignment paused the assistant; setting aiMode resumes it. */
  assistantPaused: Type.Boolean(),
  lastIncomingAt: NullableTimestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp
}

export const Conversation = Type.Object(conversationFields)
export const ConversationWithMessages = Type.Object({
  ...conversationFields,
  /** The customer opted out (README, Contacts and consent): nothing but a person's reply after they write again may be sent. */
  optedOut: Type.Boolean(),
  messages: Type.Array(ChatMessage)
})

export const ConversationsQuery = Type.Object({
  filter: Type.Optional(Type.Enum(CONVERSATION_FILTERS)),
  sort: Type.Optional(Type.Enum(CONVERSATION_SORTS)),
  /** `me` (the caller), `none` (nobody) or a user's id: whom the conversations are assigned to. */
  assigned: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  /** Conversations carrying this label. */
  label: Type.Optional(Type.String({ minLength: 1, maxLength: LABEL_BOUNDS.chars })),
  /** `me`: conversations with a note mentioning the caller. */
  mentions: Type.Optional(Type.Enum(['me'])),
  ...Pagination
})

export const UpdateConversationBody = Type.Object({
  isPinned: Type.Optional(Type.Boolean()),
  isArchived: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Type.Enum(CONVERSATION_PRIORITIES)),
  labels: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: LABEL_BOUNDS.chars }), {
    maxItems: LABEL_BOUNDS.perRecord,
    errorMessage: `labels must be at most ${LABEL_BOUNDS.perRecord} labels of 1 to ${LABEL_BOUNDS.chars} characters`
  })),
  /** A user who can use the selected account (GET /api/chat/agents), or null: nobody. */
  assignedAgentId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()])),
  aiMode: Type.Optional(Type.Enum(AI_MODES))
}, { additionalProperties: false })

/** The customer's message marked read with the typing indicator: its wamid. */
export const TypingResult = Type.Object({ wamid: Type.String() })

export const MessagesQuery = Type.Object({
  before: Type.Optional(Type.String({ maxLength: 64 })),
  limit: Pagination.limit
})

export const DraftParams = Type.Object({ id: Type.String(), messageId: Type.String() })

/** `text`: the draft as edited; absent, it is sent as the assistant wrote it. */
export const ApproveDraftBody = Type.Union([Type.Object({
  text: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, errorMessage: 'text must be 1 to 4096 characters' }))
}, { additionalProperties: false }), Type.Null()])

export const TurnsQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 })
})

const ToolCall = Type.Object({
  id: Type.String(),
  name: Type.String(),
  workflowId: nullable(Type.String()),
  runId: nullable(Type.String()),
  status: Type.String(),
  error: Type.Optional(Type.String())
})

export const AssistantTurn = Type.Object({
  id: Type.String(),
  conversationId: Type.String(),
  messageId: Type.String(),
  status: Type.Enum(ASSISTANT_TURN_STATUSES),
  outcome: Type.Union([Type.Enum(ASSISTANT_TURN_OUTCOMES), Type.Null()]),
  attempts: Type.Integer(),
  model: nullable(Type.String()),
  tokensIn: Type.Integer(),
  tokensOut: Type.Integer(),
  toolCalls: Type.Array(ToolCall),
  log: Type.Array(Type.Object({ at: Type.String(), event: Type.String(), detail: Type.Optional(Type.Record(Type.String(), Type.Unknown())) })),
  error: nullable(Type.String()),
  draftMessageId: nullable(Type.String()),
  draftDecision: Type.Union([Type.Enum(DRAFT_DECISIONS), Type.Null()]),
  createdAt: Timestamp,
  finishedAt: NullableTimestamp
})

/** A private note on a conversation (README, The team inbox: notes); `authorId` null: a workflow wrote it (`runId`). */
export const ConversationNote = Type.Object({
  id: Type.String(),
  conversationId: Type.String(),
  text: Type.String(),
  authorId: nullable(Type.String()),
  /** The author's email. */
  authorName: nullable(Type.String()),
  runId: nullable(Type.String()),
  /** The users mentioned as `@email` who can use the account, by id. */
  mentions: Type.Array(Type.String()),
  createdAt: Timestamp
})

export const NoteBody = Type.Object({
  text: Type.String({
    minLength: 1,
    maxLength: NOTE_BOUNDS.textChars,
    pattern: '\\S',
    errorMessage: `text must be 1 to ${NOTE_BOUNDS.textChars} characters`
  })
}, { additionalProperties: false })

export const NotesQuery = Type.Object({ ...Pagination })
