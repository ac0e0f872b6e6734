"""Pairs of team-memory notes labelled by hand for the possible-duplicate check (bench/review_pairs.py).

Each pair is ((title, content), (title, content), label). ``flag``: a reviewer wants to see the pair
(the same fact twice in other words, a newer version of a fact, or two notes that contradict each
other). ``keep``: two distinct facts about the same topic or system, which a reviewer should not be
asked about. Written for this benchmark; the topics are those of a web team's memory.
"""

from __future__ import annotations

DUPLICATES = [
    (
        ("JWT signing", "Access tokens are signed with RS256 using the key in src/lib/auth/keys.ts."),
        (
            "How we sign JWTs",
            "We sign our access tokens with RS256; the private key lives in src/lib/auth/keys.ts.",
        ),
    ),
    (
        ("Deploys", "Production deploys go through the GitHub Actions workflow deploy.yml, never by hand."),
        (
            "Deploying to production",
            "Never deploy production by hand: always use the deploy.yml GitHub Actions workflow.",
        ),
    ),
    (
        ("Database migrations", "Run migrations with `make migrate` before starting the app after a pull."),
        ("Migrate after pulling", "After pulling, run `make migrate` before you start the application."),
    ),
    (
        ("Feature flags", "Feature flags are read from LaunchDarkly through src/flags.ts; default to off."),
        (
            "Where flags come from",
            "We read feature flags from LaunchDarkly via src/flags.ts, and every flag defaults to off.",
        ),
    ),
    (
        ("Logging format", "Services log JSON lines to stdout; the collector ships them to Loki."),
        ("Logs", "Every service writes JSON lines to stdout, which the collector forwards to Loki."),
    ),
    (
        ("Password hashing", "User passwords are hashed with Argon2id (time cost 3, memory 64 MB)."),
        (
            "How passwords are stored",
            "We store user passwords as Argon2id hashes with time cost 3 and 64 MB of memory.",
        ),
    ),
    (
        ("Timezones", "Store all timestamps in UTC; convert to the user's zone only in the UI."),
        (
            "Timestamps are UTC",
            "All timestamps are stored in UTC and converted to the user's time zone in the UI only.",
        ),
    ),
    (
        ("API pagination", "List endpoints paginate with a cursor parameter, 50 items per page."),
        ("Pagination of lists", "Our list endpoints use cursor pagination with pages of 50 items."),
    ),
    (
        ("Retry policy", "HTTP clients retry idempotent requests three times with exponential backoff."),
        ("Client retries", "Idempotent HTTP requests are retried 3 times, backing off exponentially."),
    ),
    (
        ("Code review", "Every pull request needs one approval from a code owner before merging."),
        ("Merging pull requests", "A pull request can be merged once a code owner has approved it."),
    ),
    (
        ("Staging database", "Staging uses a nightly anonymised copy of the production database."),
        ("Staging data", "The staging database is refreshed every night from an anonymised production dump."),
    ),
    (
        ("Image uploads", "Uploaded images are resized to 1600 px and stored in the S3 bucket media-prod."),
        (
            "Where uploads go",
            "We resize uploaded images to 1600 px wide and keep them in the media-prod S3 bucket.",
        ),
    ),
]

UPDATES = [
    (
        ("Node version", "The frontend builds with Node 18."),
        ("Node version", "The frontend builds with Node 20 since the upgrade in March."),
    ),
    (
        ("PostgreSQL version", "Production runs PostgreSQL 14 on RDS."),
        ("PostgreSQL version", "Production runs PostgreSQL 16 on RDS after the November upgrade."),
    ),
    (
        ("Release cadence", "We release the mobile app every two weeks on Tuesday."),
        ("Release cadence", "We now release the mobile app weekly, every Tuesday."),
    ),
    (
        ("On-call rotation", "On-call rotates weekly on Monday at 10:00."),
        ("On-call rotation", "On-call now rotates every Wednesday at 09:00."),
    ),
    (
        ("Session lifetime", "User sessions expire after 30 days of inactivity."),
        ("Session lifetime", "User sessions now expire after 14 days of inactivity."),
    ),
    (
        ("Rate limit", "The public API allows 100 requests per minute per key."),
        ("Rate limit", "The public API allows 300 requests per minute per key since v2."),
    ),
    (
        ("Search engine", "Product search runs on Elasticsearch 7."),
        ("Search engine", "Product search moved from Elasticsearch to OpenSearch 2."),
    ),
    (
        ("Payments provider", "Card payments go through Stripe."),
        ("Payments provider", "Card payments go through Adyen since we left Stripe in June."),
    ),
    (
        ("CI runners", "CI runs on self-hosted runners in the office rack."),
        ("CI runners", "CI runs on GitHub-hosted runners; the office rack was retired."),
    ),
    (
        ("Error tracking", "Frontend errors are reported to Sentry project web-prod."),
        ("Error tracking", "Frontend errors are reported to Sentry project web-2024 (web-prod is archived)."),
    ),
    (
        ("Backup retention", "Database backups are kept for 7 days."),
        ("Backup retention", "Database backups are kept for 35 days to meet the audit requirement."),
    ),
    (
        ("Python version", "Services run on Python 3.10."),
        ("Python version", "Services run on Python 3.12 after the spring upgrade."),
    ),
]

CONTRADICTIONS = [
    (
        ("Friday deploys", "Deploying on Fridays is fine as long as someone is on call."),
        ("No deploys on Friday", "Never deploy on Fridays: changes wait until Monday."),
    ),
    (
        ("ORM usage", "Always use the ORM for queries; raw SQL is not allowed."),
        ("Raw SQL", "Raw SQL is allowed for reports when the ORM is too slow."),
    ),
    (
        ("Mocks in tests", "Integration tests mock the database to stay fast."),
        ("Mocks in tests", "Integration tests must hit a real database, never a mock."),
    ),
    (
        ("Squash merges", "Pull requests are squash-merged into main."),
        ("Merge strategy", "Pull requests are merged with a merge commit; squashing is not allowed."),
    ),
    (
        ("Tabs or spaces", "Python code is indented with four spaces."),
        ("Indentation", "Python code is indented with tabs in this repository."),
    ),
    (
        ("Caching user profiles", "User profiles are cached in Redis for 10 minutes."),
        (
            "User profiles are not cached",
            "User profiles are never cached; always read them from the database.",
        ),
    ),
    (
        ("Email sending", "Transactional e-mail is sent synchronously in the request."),
        ("Email sending", "Transactional e-mail is always queued to Celery, never sent in the request."),
    ),
    (
        ("API versioning", "The API is versioned in the URL path (/v1/, /v2/)."),
        ("API versioning", "The API is versioned with an Accept header, not in the URL."),
    ),
    (
        ("Secrets", "Secrets are kept in the .env file committed to the private repository."),
        ("Secrets", "Secrets must never be committed; they come from Vault at runtime."),
    ),
    (
        ("Primary keys", "Tables use auto-increment integer primary keys."),
        ("Primary keys", "Tables use UUID primary keys; integer ids are not allowed."),
    ),
]

SAME_TOPIC_DISTINCT = [
    (
        ("JWT signing", "Access tokens are signed with RS256 using the key in src/lib/auth/keys.ts."),
        ("JWT expiry", "Access tokens expire after 15 minutes; refresh tokens after 30 days."),
    ),
    (
        ("Deploys", "Production deploys go through the GitHub Actions workflow deploy.yml, never by hand."),
        ("Rollbacks", "To roll back, re-run the previous successful deploy.yml run from the Actions tab."),
    ),
    (
        ("Database migrations", "Run migrations with `make migrate` before starting the app after a pull."),
        ("Migration review", "Migrations that lock a large table need a DBA's review before merging."),
    ),
    (
        ("Feature flags", "Feature flags are read from LaunchDarkly through src/flags.ts; default to off."),
        ("Flag cleanup", "Remove a feature flag within two sprints of its full rollout."),
    ),
    (
        ("Logging format", "Services log JSON lines to stdout; the collector ships them to Loki."),
        ("Log retention", "Loki keeps logs for 14 days; longer retention goes to S3 cold storage."),
    ),
    (
        ("Password hashing", "User passwords are hashed with Argon2id (time cost 3, memory 64 MB)."),
        ("Password reset", "Password reset links are valid for one hour and can be used once."),
    ),
    (
        ("Timezones", "Store all timestamps in UTC; convert to the user's zone only in the UI."),
        ("Date formats", "The API writes dates in ISO 8601 with an explicit offset."),
    ),
    (
        ("API pagination", "List endpoints paginate with a cursor parameter, 50 items per page."),
        ("API errors", "Errors are JSON objects with a code and a message, and a 4xx or 5xx status."),
    ),
    (
        ("Retry policy", "HTTP clients retry idempotent requests three times with exponential backoff."),
        ("Timeouts", "Outgoing HTTP calls time out after 5 seconds."),
    ),
    (
        ("Code review", "Every pull request needs one approval from a code owner before merging."),
        ("Pull request size", "Keep pull requests under 400 changed lines when you can."),
    ),
    (
        ("Staging database", "Staging uses a nightly anonymised copy of the production database."),
        ("Staging access", "Staging is reachable only through the VPN."),
    ),
    (
        ("Image uploads", "Uploaded images are resized to 1600 px and stored in the S3 bucket media-prod."),
        ("Upload limits", "Uploads are limited to 20 MB per file."),
    ),
    (
        ("Node version", "The frontend builds with Node 20."),
        ("Package manager", "The frontend uses pnpm; do not commit a package-lock.json."),
    ),
    (
        ("PostgreSQL version", "Production runs PostgreSQL 16 on RDS."),
        ("Connection pooling", "Services connect to PostgreSQL through PgBouncer in transaction mode."),
    ),
    (
        ("Release cadence", "We release the mobile app weekly, every Tuesday."),
        ("App store review", "Submit the mobile build to app review by Friday for a Tuesday release."),
    ),
    (
        ("On-call rotation", "On-call rotates every Wednesday at 09:00."),
        ("Paging", "PagerDuty pages the on-call engineer for any SEV1 or SEV2 alert."),
    ),
    (
        ("Session lifetime", "User sessions expire after 14 days of inactivity."),
        ("Session storage", "Sessions are stored in Redis, keyed by a random 32-byte id."),
    ),
    (
        ("Rate limit", "The public API allows 300 requests per minute per key."),
        ("API keys", "API keys are shown once at creation and stored as SHA-256 hashes."),
    ),
    (
        ("Search engine", "Product search runs on OpenSearch 2."),
        ("Search relevance", "Product titles weigh three times as much as descriptions in search."),
    ),
    (
        ("Payments provider", "Card payments go through Adyen."),
        ("Refunds", "Refunds over 500 EUR need a second approval in the back office."),
    ),
    (
        ("CI runners", "CI runs on GitHub-hosted runners."),
        ("CI caching", "CI caches the pnpm store and the pip wheels between runs."),
    ),
    (
        ("Error tracking", "Frontend errors are reported to Sentry project web-2024."),
        ("Source maps", "Source maps are uploaded to Sentry on every release build."),
    ),
    (
        ("Backup retention", "Database backups are kept for 35 days."),
        ("Restore drills", "We test a full database restore once a quarter."),
    ),
    (
        ("Python version", "Services run on Python 3.12."),
        ("Dependency updates", "Renovate opens dependency update pull requests every Monday."),
    ),
    (
        ("Friday deploys", "Never deploy on Fridays: changes wait until Monday."),
        ("Change freeze", "There is a change freeze from December 20 to January 3."),
    ),
    (
        ("Mocks in tests", "Integration tests must hit a real database, never a mock."),
        ("Test data", "Tests create their own data with factories; no shared fixtures."),
    ),
    (
        ("Secrets", "Secrets come from Vault at runtime."),
        ("Secret rotation", "Database passwords are rotated every 90 days."),
    ),
    (
        ("Primary keys", "Tables use UUID primary keys."),
        ("Soft deletes", "Rows are soft-deleted with a deleted_at column, never removed."),
    ),
    (
        ("Email sending", "Transactional e-mail is always queued to Celery."),
        ("Email templates", "E-mail templates live in templates/email and are written in MJML."),
    ),
    (
        ("API versioning", "The API is versioned in the URL path (/v1/, /v2/)."),
        ("API deprecation", "A deprecated API version is kept for six months after its successor ships."),
    ),
]

# Harder: the same shape of sentence about another service, environment or object: distinct facts.
PARALLEL_DISTINCT = [
    (
        ("Orders database", "The orders service stores its data in PostgreSQL 16 on RDS."),
        ("Analytics warehouse", "The analytics pipeline loads its data into BigQuery every night."),
    ),
    (
        ("Orders service logs", "The orders service logs JSON lines to Loki."),
        ("Billing service metrics", "The billing service exposes Prometheus metrics on port 9100."),
    ),
    (
        ("Web app port", "The web app listens on port 3000 in development."),
        ("API port", "The API listens on port 8000 in development."),
    ),
    (
        ("Staging URL", "Staging is at https://staging.example.com."),
        ("Production URL", "Production is at https://app.example.com."),
    ),
    (
        ("Access token lifetime", "Access tokens expire after 15 minutes."),
        ("Invitation lifetime", "Invitation links expire after 7 days."),
    ),
    (
        ("Mobile release", "The mobile app is released every Tuesday."),
        ("Backend release", "The backend is deployed continuously from main."),
    ),
    (
        ("Frontend tests", "Frontend unit tests run with Vitest."),
        ("End-to-end tests", "End-to-end tests run with Playwright against staging."),
    ),
    (
        ("Orders queue", "Order events are published to the Kafka topic orders.v1."),
        ("Email queue", "E-mails are queued in the Celery queue mail."),
    ),
    (
        ("Admin access", "Only the platform team has admin access to AWS production."),
        ("Read-only access", "Engineers get read-only access to production logs in Grafana."),
    ),
    (
        ("Image CDN", "Images are served through CloudFront from the media-prod bucket."),
        ("Static assets", "JavaScript and CSS bundles are served with a one-year cache header."),
    ),
    (
        ("Search index rebuild", "The product search index is rebuilt nightly at 02:00 UTC."),
        ("Sitemap generation", "The sitemap is regenerated every hour."),
    ),
    (
        ("Auth service owner", "The identity team owns the auth service."),
        ("Payments owner", "The checkout team owns the payments service."),
    ),
    (
        ("Node version", "The frontend builds with Node 20."),
        ("Python version", "Services run on Python 3.12."),
    ),
    (
        ("Orders retention", "Orders are kept for ten years for tax purposes."),
        ("Log retention", "Application logs are kept for 14 days."),
    ),
    (
        ("Unit test coverage", "New backend code needs unit tests; coverage must not drop."),
        ("Accessibility checks", "New pages must pass the axe accessibility checks in CI."),
    ),
]

PAIRS = [
    *((a, b, "flag", "duplicate") for a, b in DUPLICATES),
    *((a, b, "flag", "update") for a, b in UPDATES),
    *((a, b, "flag", "contradiction") for a, b in CONTRADICTIONS),
    *((a, b, "keep", "same topic") for a, b in SAME_TOPIC_DISTINCT),
    *((a, b, "keep", "parallel") for a, b in PARALLEL_DISTINCT),
]
