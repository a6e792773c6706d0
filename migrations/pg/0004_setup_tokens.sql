CREATE TABLE "setup_tokens" (
	"token_hash" text COLLATE "C" PRIMARY KEY NOT NULL,
	"server_id" text COLLATE "C" NOT NULL,
	"created_at" text COLLATE "C" NOT NULL
);
