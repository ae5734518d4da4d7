//! Building the service: storage, actors, state and the HTTP server.
use std::{net::TcpListener, sync::Arc, time::Duration};

use actix_web::{dev::Server, middleware::from_fn, rt::task::JoinHandle, web, App, HttpServer};

use crate::{
    areas::{api_keys::KeyCache, rotations::Rotations},
    auth::rate_limit::{self, RateLimiter},
    cache::{bus::Bus, redis::SharedRedis},
    config::Settings,
    crypto::password::PasswordHasher,
    events::delivery,
    http::cors::OriginUnion,
    http::{self as gh_http, errors},
    region::{
        dispatch,
        membership::{Announcement, Membership, HEARTBEAT},
        moves::MovePolicy,
        predecessor::Predecessor,
        route_table::RouteTable,
        router::Directory,
    },
    routes,
    shutdown::Shutdown,
    state::AppState,
    storage::{catalog, keyed_hash_secret, shards, Storage},
    telemetry,
    tenancy::{parts::Parts, registry::TenantRegistry},
    tokens::{keys::SigningKeys, AccessTokens},
};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("storage: {0}")]
    Storage(#[from] sea_orm::DbErr),
    #[error(transparent)]
    MasterKey(#[from] crate::crypto::master_key::MasterKeyError),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("listen on {0}: {1}")]
    Listen(String, std::io::Error),
    #[error("http client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("webhooks: {0}")]
    Webhooks(String),
    #[error("dns resolver: {0}")]
    Dns(String),
    #[error("region `{0}` is not in deployment.regions, but {1} application(s) are pinned or moving to it: move them out first, then remove it")]
    RegionInUse(String, u64),
}

pub struct Application {
    port: u16,
    server: Server,
    /// This process's claim on its data directory, held while it runs.
    _predecessor: Predecessor,
    /// The webhook delivery and mail workers, awaited at shutdown.
    workers: Vec<JoinHandle<()>>,
    pub state: web::Data<AppState>,
}

/// Catalog audit rows left pending by a crash (between a settings change's
/// catalog commit and its relay) reach their chains now and then every few
/// seconds, on whichever node holds the region.
fn relay_catalog_audit(storage: Arc<Storage>) {
    // Weak: the loop ends with the node, and does not keep its connections open.
    let storage = Arc::downgrade(&storage);
    actix_web::rt::spawn(async move {
        // At start every row is a leftover; later, rows a request may still be relaying are left to it.
        let mut min_age = chrono::Duration::zero();
        loop {
            let Some(storage) = storage.upgrade() else { return };
            if let Err(err) = crate::areas::applications::relay_pending_audit(&storage, min_age).await {
                tracing::warn!(error = %crate::error::cause_chain(&err), "relaying catalog audit rows failed");
            }
            min_age = chrono::Duration::seconds(10);
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
}

/// Shards added to the held regions (`gatehouse shards add`) are opened
/// within [`shards::REFRESH`], their workers started: no restart.
fn open_added_shards(storage: Arc<Storage>) {
    let storage = Arc::downgrade(&storage);
    actix_web::rt::spawn(async move {
        loop {
            tokio::time::sleep(shards::REFRESH).await;
            let Some(storage) = storage.upgrade() else { return };
            if let Err(err) = storage.refresh_shards().await {
                tracing::warn!(error = %err, "reading the added shards failed");
            }
        }
    });
}

/// Opens the storage (every shard of the held regions) and applies every migration.
pub async fn open_storage(settings: &Settings) -> Result<Storage, StartupError> {
    let storage = Storage::open(settings).await?;
    storage.migrate().await?;
    keyed_hash_secret::load(&storage.catalog, storage.master_key()).await?;
    storage.refresh_shards().await?;
    for (region, applications) in catalog::regions_in_use(&storage.catalog).await? {
        if settings.region_named(&region).is_none() {
            return Err(StartupError::RegionInUse(region, applications));
        }
    }
    Ok(storage)
}

impl Application {
    /// Builds the server bound to `server.listen` (port 0 picks a free port).
    pub async fn build(mut settings: Settings) -> Result<Application, StartupError> {
        let listener = TcpListener::bind(&settings.server.listen)
            .map_err(|e| StartupError::Listen(settings.server.listen.clone(), e))?;
        let address = listener.local_addr().map_err(|e| StartupError::Listen(settings.server.listen.clone(), e))?;
        let port = address.port();
        // Port 0 picked a free port: the public URL (the token issuer) names the real one.
        settings.server.listen = address.to_string();
        // The metrics recorder first: caches look their counters up once.
        let metrics = telemetry::metrics_handle();
        let storage = Arc::new(open_storage(&settings).await?);
        let master_key = storage.master_key().clone();
        let redis = settings.cache.redis_url.as_deref().map(redis::Client::open).transpose()?;
        let shared = redis.clone().map(|client| SharedRedis::new(client, &settings.deployment.name));
        let bus = shared.clone().map(Bus::start).unwrap_or_else(Bus::local);
        let predecessor = Predecessor::claim(&settings.storage.data_dir, bus.node());
        let membership = shared.clone().map(|redis| {
            let me = settings.advertised_url().map(|url| Announcement {
                node: bus.node(),
                url,
                regions: settings.node.regions.clone(),
            });
            if me.is_none() {
                tracing::warn!("server.listen is every address and node.advertise_url is unset: this node takes no forwarded requests");
            }
            Membership::new(redis, me)
        });
        let routes = RouteTable::new(&settings.node.peers);
        let directory = Directory::start(storage.catalog.clone(), shared.clone(), &bus, routes, membership);
        directory.listen(&bus);
        let rotations =
            Rotations::new(storage.clone(), chrono::Duration::seconds(settings.tokens.refresh_ttl_seconds as i64));
        let tenants = TenantRegistry::new(
            storage.clone(),
            directory.clone(),
            bus.clone(),
            SigningKeys::new(
                master_key.clone(),
                settings.tokens.access_ttl_seconds,
                settings.tokens.jwks_max_age_seconds,
            ),
            master_key.clone(),
            shared.clone(),
            MovePolicy {
                lease: Duration::from_secs(settings.node.move_lease_seconds.max(1)),
                predecessor: predecessor.id,
                copy_within: Duration::from_secs(settings.node.move_copy_timeout_seconds.max(1)),
                sends_settle_within: crate::areas::mail_queue::worker::LEASE,
            },
            tenant_parts(),
        );
        let state = web::Data::new(AppState {
            mailer: crate::areas::mailer::Mailer::new(
                tenants.clone(),
                master_key.clone(),
                settings.private_destinations_allowed(),
            ),
            domains: crate::areas::sso_domains::DomainResolver::new(&settings.dns).map_err(StartupError::Dns)?,
            tenants,
            settings: Arc::new(settings.clone()),
            storage,
            directory,
            keys: KeyCache::new(bus.clone()),
            limiter: RateLimiter::with_shared(shared.clone()),
            passwords: PasswordHasher::new(
                settings.security.password_hash_concurrency,
                settings.security.password_hash_queue,
            ),
            tokens: AccessTokens::new(
                settings.public_url(),
                settings.tokens.access_ttl_seconds,
                settings.tokens.jwks_max_age_seconds,
            ),
            connect_statuses: crate::areas::billing::ConnectStatuses::new(shared.clone(), &bus),
            entitlements: crate::areas::entitlements::OrganizationEntitlements::new(shared.clone(), &bus),
            bus,
            rotations,
            master_key,
            metrics,
            redis,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                // A peer whose address no longer answers (a dead machine
                // drops the SYN) is passed over, not waited on for 30 s.
                .connect_timeout(Duration::from_secs(1))
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
            providers: crate::oauth::client::ProviderClient::new()?,
            webhooks: delivery::Clients::build(
                Duration::from_secs(settings.webhooks.timeout_seconds),
                settings.private_destinations_allowed(),
            )?,
            shutdown: Shutdown::default(),
        });
        let deliverer = delivery::Deliverer {
            settings: settings.webhooks.clone(),
            directory: state.directory.clone(),
            clients: state.webhooks.clone(),
            master_key: state.master_key.clone(),
            storage: state.storage.clone(),
            shutdown: state.shutdown.clone(),
        };
        let mut workers = vec![delivery::start(deliverer)];
        workers.push(crate::areas::mail_queue::worker::start(crate::areas::mail_queue::worker::MailWorker {
            mailer: state.mailer.clone(),
            master_key: state.master_key.clone(),
            directory: state.directory.clone(),
            storage: state.storage.clone(),
            shutdown: state.shutdown.clone(),
        }));
        workers.push(crate::areas::users::imports::worker::start(crate::areas::users::imports::worker::ImportWorker {
            master_key: state.master_key.clone(),
            directory: state.directory.clone(),
            storage: state.storage.clone(),
            shutdown: state.shutdown.clone(),
        }));
        relay_catalog_audit(state.storage.clone());
        open_added_shards(state.storage.clone());
        state.tenants.resume_stalled_moves();
        let app_state = state.clone();
        let settings_data = web::Data::from(state.settings.clone());
        let origins = web::Data::new(OriginUnion::new(&state.bus, state.storage.catalog.clone()));
        let described = crate::openapi::for_deployment(&settings);
        let document = web::Data::new(crate::openapi::served::Served::new(&described));
        let requirements = web::Data::new(crate::openapi::security::Requirements::of_document(&described));
        let allowed = std::sync::Arc::new(errors::AllowedMethods::of_document(&described));
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(app_state.clone())
                .app_data(document.clone())
                .app_data(requirements.clone())
                .app_data(settings_data.clone())
                .app_data(origins.clone())
                .wrap(errors::method_not_allowed(allowed.clone()))
                .wrap(from_fn(errors::head_as_get))
                .wrap(from_fn(rate_limit::headers))
                .wrap(from_fn(gh_http::cors::middleware))
                .wrap(from_fn(dispatch::middleware))
                .wrap(from_fn(gh_http::head_limits::middleware))
                .wrap(from_fn(gh_http::metrics::middleware))
                .wrap(from_fn(gh_http::caching::no_store_unless_declared))
                .wrap(from_fn(gh_http::request_id::middleware))
                .configure(routes::configure)
                .default_service(web::to(errors::unknown_route))
        })
        .shutdown_timeout(settings.server.shutdown_timeout_seconds)
        // `run_until_stopped` takes the node out of the route table first.
        .disable_signals();
        if settings.server.workers > 0 {
            server = server.workers(settings.server.workers);
        }
        let server =
            server.listen(listener).map_err(|e| StartupError::Listen(settings.server.listen.clone(), e))?.run();
        Ok(Application { port, server, _predecessor: predecessor, workers, state })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until a signal stops the server, then stops the delivery
    /// workers once they have recorded the outcomes they hold, and closes the
    /// database pools, all within `server.shutdown_timeout_seconds` for each
    /// stage. On SIGTERM or SIGINT the node first leaves the route table and
    /// keeps answering while the others take note ([`LEAVING_FOR`]), then
    /// stops accepting and finishes what it holds; SIGQUIT stops at once.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let handle = self.server.handle();
        let mut server = self.server;
        let state = self.state;
        tokio::select! {
            served = &mut server => served?,
            graceful = stop_signal() => {
                if graceful && state.directory.leave().await {
                    tokio::time::sleep(LEAVING_FOR).await;
                }
                // The server acts on the stop only while it is polled.
                let (_, served) = futures_util::future::join(handle.stop(graceful), server).await;
                served?;
            }
        }
        state.shutdown.signal();
        let bound = Duration::from_secs(state.settings.server.shutdown_timeout_seconds);
        if tokio::time::timeout(bound, futures_util::future::join_all(self.workers)).await.is_err() {
            tracing::warn!("delivery workers did not finish in time; their leases expire and the messages are retried");
        }
        for db in state.storage.all() {
            if let Err(err) = db.conn.clone().close().await {
                tracing::warn!(database = db.label, error = %err, "closing the database pool failed");
            }
        }
        tracing::info!("stopped");
        Ok(())
    }
}

/// How long a node that left the route table keeps answering: the others
/// hear of it on the bus at once, or at their next heartbeat without it.
const LEAVING_FOR: Duration = HEARTBEAT.saturating_mul(2);

/// Waits for SIGTERM or SIGINT (`true`: stop gracefully) or SIGQUIT.
async fn stop_signal() -> bool {
    use tokio::signal::unix::{signal, SignalKind};
    let listen = |kind| signal(kind).map_err(|err| tracing::error!(error = %err, "cannot listen for signals"));
    let (Ok(mut terminate), Ok(mut interrupt), Ok(mut quit)) =
        (listen(SignalKind::terminate()), listen(SignalKind::interrupt()), listen(SignalKind::quit()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = terminate.recv() => true,
        _ = interrupt.recv() => true,
        _ = quit.recv() => false,
    }
}

/// The areas' settings every tenant state holds (see `tenancy::parts`).
fn tenant_parts() -> Parts {
    routes::AREAS.iter().fold(Parts::default(), |parts, area| (area.parts)(parts))
}
