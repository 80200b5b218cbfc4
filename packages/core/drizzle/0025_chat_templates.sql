CREATE TABLE "chat_templates" (
	"business_account_id" text NOT NULL,
	"name" text NOT NULL,
	"language" text NOT NULL,
	"template_id" text NOT NULL,
	"category" text NOT NULL,
	"components" jsonb NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"quality" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chat_templates_business_account_id_name_language_pk" PRIMARY KEY("business_account_id","name","language")
);
