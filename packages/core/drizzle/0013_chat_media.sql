-- The media of image, document, audio, video and sticker messages (README, Chat: media): the platform's
-- media id or link, its type, caption, filename and hash; null for other messages.
ALTER TABLE "messages" ADD COLUMN "media" jsonb;
