/** The assistant's knowledge (README, Knowledge): sources per platform number, their indexing, retrieval. */
export { knowledgeIndexer, type KnowledgeIndexer } from './indexer.ts'
export { DEFAULT_PASSAGES, knowledgeRetrieval, MAX_PASSAGES, type KnowledgeRetrieval, type RetrievedPassage } from './retrieval.ts'
export { DEFAULT_KNOWLEDGE_LANGUAGE, enqueueIndexing, indexingRequeue, KNOWLEDGE_LANGUAGES, KNOWLEDGE_LIMITS, knowledgeSourcesRepository, type IndexRequest, type KnowledgeSourceView, type NewKnowledgeSource } from './sources.ts'
