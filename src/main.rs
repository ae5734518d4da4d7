use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use gatehouse::{
    areas::application_archive::{self, ArchiveError},
    audit,
    bootstrap::{self, BootstrapRequest, FirstStart},
    config::Settings,
    crypto::master_key::MasterKey,
    region::shard_admin::{self, ShardError},
    startup::{self, Application},
    storage::{
        move_journal::{self, CancelAsked},
        Db, Storage,
    },
    telemetry,
    tenancy::Environment,
};
use uuid::Uuid;

#[derive(Parser)]
#[command(name = "gatehouse", about = "Multi-tenant identity and access management", version = telemetry::LONG_VERSION)]
struct Cli {
    /// A configuration file (else GATEHOUSE_CONFIG).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the HTTP service.
    Serve,
    /// Create an account, an application and an admin key; print them as JSON.
    Bootstrap {
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "development", value_parser = ["development", "staging", "production"])]
        environment: String,
        /// One of `deployment.regions`; default: the first of them.
        #[arg(long)]
        region: Option<String>,
        #[arg(long = "allowed-origin")]
        allowed_origins: Vec<String>,
    },
    /// Apply migrations to the catalog and every regional database.
    Migrate,
    /// Print the OpenAPI document (`GET /v1/openapi.json`) without a server.
    Openapi,
    /// Time argon2id password hashes on this machine (one thread, then one
    /// per core) for capacity planning; print the result as JSON.
    MeasureHashing {
        #[arg(long, default_value_t = 20)]
        rounds: u32,
    },
    /// Copy the embedded default's databases (SQLite, online, while `serve`
    /// runs) and its master key file into a new directory.
    Backup {
        #[arg(long)]
        to: PathBuf,
    },
    /// Copy a backup into the (empty) data directory, before `serve`.
    Restore {
        #[arg(long)]
        from: PathBuf,
    },
    /// Write a whole application into an archive directory, its secrets
    /// sealed under a key of the archive's own, written to `--key-file`
    /// (docs/operations/application-archives.md).
    Export {
        #[arg(long)]
        application: Uuid,
        /// A new directory (or an empty one).
        #[arg(long)]
        to: PathBuf,
        /// A new file for the archive's key (mode 0600); keep it apart from the archive.
        #[arg(long)]
        key_file: PathBuf,
    },
    /// Restore an application from an archive into this deployment, where
    /// it must not exist yet.
    Import {
        #[arg(long)]
        from: PathBuf,
        #[arg(long)]
        key_file: PathBuf,
        /// The region to restore it in (default: the archive's).
        #[arg(long)]
        region: Option<String>,
    },
    /// End users: import them from another system.
    Users {
        #[command(subcommand)]
        command: UsersCommand,
    },
    /// Audit-log tools.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Region moves: inspect the journal, cancel a move.
    Moves {
        #[command(subcommand)]
        command: MovesCommand,
    },
    /// A region's shards: list them, add one, move an application between
    /// two of one region to rebalance.
    Shards {
        #[command(subcommand)]
        command: ShardsCommand,
    },
    /// The master key that seals secrets at rest: a new one, and sealing
    /// every secret again under it (docs/operations/master-key-rotation.md).
    MasterKey {
        #[command(subcommand)]
        command: MasterKeyCommand,
    },
}

#[derive(Subcommand)]
enum MasterKeyCommand {
    /// Print a new random key as `ID:base64`, its id the one after the
    /// current key's: the next `security.master_key` (the current key
    /// becomes `security.previous_master_key`).
    Generate,
    /// The embedded default: make a new key current in the data directory
    /// (`master.key`; the current one moves to `master.key.previous`). Run
    /// it with the server stopped; start it again, then run `rotate`.
    New,
    /// Seal every value the previous key sealed again under the current
    /// one, while the nodes serve with both. Prints what it did as JSON;
    /// exits 1 while a value is still sealed under another key (run it
    /// again: it resumes). Then the previous key is no longer needed.
    Rotate,
}

#[derive(Subcommand)]
enum ShardsCommand {
    /// Print every shard as JSON lines, with how many applications each holds.
    List,
    /// Add a shard to a region: its database is migrated and recorded (its
    /// URL sealed with the master key); the nodes of the region open it
    /// within seconds, with no restart, and new applications are placed on
    /// it (the least loaded shard of the region takes each).
    Add {
        #[arg(long)]
        region: String,
        /// A region name's rules: lower-case letters, digits and `-`.
        #[arg(long)]
        name: String,
        /// A database of its own (PostgreSQL, or a SQLite file on a single node).
        #[arg(long)]
        database_url: String,
    },
    /// Move an application to another shard of its region through the
    /// journaled region-move steps (503 for its requests during the copy);
    /// a node of the region runs it. Waits for it to end.
    Move {
        #[arg(long)]
        application: Uuid,
        #[arg(long)]
        to: String,
        #[arg(long, default_value_t = 120)]
        wait_seconds: u64,
    },
}

#[derive(Subcommand)]
enum MovesCommand {
    /// Print the journal's moves as JSON lines, unfinished first.
    List {
        /// Finished moves too (`cleaned`, `rolled_back`).
        #[arg(long)]
        all: bool,
    },
    /// Ask for an application's move to be rolled back (refused once it
    /// has switched); wait for the node running it, or the next to resume
    /// it, to do so.
    Cancel {
        #[arg(long)]
        application: Uuid,
        /// How long to wait for the roll-back (0: ask and return).
        #[arg(long, default_value_t = 90)]
        wait_seconds: u64,
    },
}

#[derive(Subcommand)]
enum UsersCommand {
    /// Import users from an NDJSON file (one user a line, as
    /// `POST /v1/users/imports` takes them), working the import in this
    /// process; prints each import's outcome as JSON and exits 1 if a line
    /// was refused.
    Import {
        #[arg(long)]
        application: Uuid,
        /// The NDJSON file; `-` reads standard input.
        file: PathBuf,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Recompute an application's chain; name the first row that does not hold.
    Verify {
        #[arg(long)]
        application: Uuid,
    },
}

/// The exit codes besides 0 (docs/reference/cli.md): 1 is a command's
/// answer "no" (`ExitCode::FAILURE`: a broken chain, nothing to cancel); 2
/// is a usage error (clap's own, and an argument the configuration does not
/// know); 3 is a configuration that does not load or a dependency (a
/// database, Redis) that is unavailable or fails.
const USAGE: u8 = 2;
const DEPENDENCY_UNAVAILABLE: u8 = 3;

#[actix_web::main]
async fn main() -> ExitCode {
    gatehouse::memory::cap_malloc_arenas();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(err) => {
            eprintln!("gatehouse: {err}");
            ExitCode::from(DEPENDENCY_UNAVAILABLE)
        }
    }
}

/// Once the workers have built their routes (they do on their own threads
/// as the server starts), the code pages only start-up ran go back to the
/// kernel (`gatehouse::memory`).
async fn release_start_up_code() {
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let bytes = gatehouse::memory::release_start_up_code();
    tracing::debug!(bytes, "start-up code pages given back");
}

async fn run(cli: Cli) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let settings = Settings::load(cli.config.as_deref())?;
    telemetry::init_logging(settings.log.format);
    if matches!(cli.command, Command::Serve) {
        let files: Vec<String> =
            Settings::files(cli.config.as_deref()).iter().map(|f| f.display().to_string()).collect();
        tracing::info!(version = telemetry::VERSION, commit = telemetry::COMMIT, config_files = ?files, "gatehouse starting");
    }
    match cli.command {
        Command::Serve => {
            let app = Application::build(settings.clone()).await?;
            match bootstrap::first_start(&app.state.storage, &settings).await? {
                FirstStart::Created(first) => println!(
                    "First start: created a development application.\n  application_id: {}\n  secret_key:     {}\n(The secret key is shown this once.)",
                    first.application_id, first.secret_key
                ),
                FirstStart::LeftEmpty => tracing::info!(
                    "no application yet: create the first with `gatehouse bootstrap` (this deployment creates none on its first start: bootstrap.first_start_application)"
                ),
                FirstStart::NotEmpty => {}
            }
            if settings.private_destinations_allowed() {
                tracing::warn!(
                    embedded_default = settings.is_embedded(),
                    "private destinations allowed: development applications' webhooks, hooks and SMTP providers may \
                     reach loopback, private and link-local addresses (security.allow_private_destinations); set it \
                     false for any deployment that serves more than one account"
                );
            }
            tracing::info!(port = app.port(), "gatehouse listening");
            actix_web::rt::spawn(release_start_up_code());
            app.run_until_stopped().await?;
        }
        Command::Bootstrap { name, environment, region, allowed_origins } => {
            MasterKey::load_or_generate(&settings.security, &settings.storage.data_dir)?;
            let storage = startup::open_storage(&settings).await?;
            let request = BootstrapRequest {
                name,
                environment: Environment::parse(&environment).expect("clap checked the value"),
                region: match region.map(|name| settings.region_named(&name).ok_or(name)) {
                    None => settings.deployment.regions[0],
                    Some(Ok(region)) => region,
                    Some(Err(name)) => {
                        eprintln!(
                            "gatehouse: region `{name}` is not one of the deployment's: {}",
                            settings.region_names()
                        );
                        return Ok(ExitCode::from(USAGE));
                    }
                },
                allowed_origins,
            };
            let created = bootstrap::bootstrap(&storage, request).await?;
            println!("{}", serde_json::to_string(&created)?);
        }
        Command::MeasureHashing { rounds } => {
            let measured = gatehouse::crypto::password::measure(rounds.max(1));
            println!("{}", serde_json::to_string(&measured)?);
        }
        Command::Openapi => {
            println!("{}", gatehouse::openapi::for_deployment(&settings));
        }
        Command::Migrate => {
            startup::open_storage(&settings).await?;
            eprintln!("migrations applied");
        }
        Command::Moves { command: MovesCommand::List { all } } => {
            let storage = startup::open_storage(&settings).await?;
            for row in move_journal::list(&storage.catalog, !all).await? {
                println!("{}", serde_json::to_string(&row)?);
            }
        }
        Command::Moves { command: MovesCommand::Cancel { application, wait_seconds } } => {
            let storage = startup::open_storage(&settings).await?;
            return cancel_move(&storage.catalog, application, std::time::Duration::from_secs(wait_seconds)).await;
        }
        Command::Shards { command } => {
            let storage = startup::open_storage(&settings).await?;
            return shards_command(&storage, &settings, command).await;
        }
        Command::Backup { to } => {
            let storage = startup::open_storage(&settings).await?;
            let manifest = gatehouse::storage::backup::backup(&storage, &settings.storage.data_dir, &to).await?;
            println!("{}", serde_json::to_string(&manifest)?);
        }
        Command::Restore { from } => {
            let manifest = gatehouse::storage::backup::restore(&from, &settings.storage.data_dir)?;
            println!("{}", serde_json::to_string(&manifest)?);
        }
        Command::Users { command: UsersCommand::Import { application, file } } => {
            let text = match file.as_os_str() == "-" {
                true => std::io::read_to_string(std::io::stdin())?,
                false => std::fs::read_to_string(&file)?,
            };
            let storage = startup::open_storage(&settings).await?;
            let ended = gatehouse::areas::users::imports::import_file(&storage, application, &text)
                .await
                .map_err(|err| err.to_string())?;
            for job in &ended {
                println!("{}", serde_json::to_string(job)?);
            }
            if ended.iter().any(|job| job.failed > 0) {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::MasterKey { command } => return master_key_command(&settings, command).await,
        Command::Export { application, to, key_file } => {
            let storage = startup::open_storage(&settings).await?;
            match application_archive::export(&storage, application, &to, &key_file).await {
                Ok(manifest) => println!("{}", serde_json::to_string(&manifest)?),
                Err(ArchiveError::Refused(why)) => {
                    eprintln!("gatehouse: {why}");
                    return Ok(ExitCode::FAILURE);
                }
                Err(err) => return Err(err.into()),
            }
        }
        Command::Import { from, key_file, region } => {
            let storage = startup::open_storage(&settings).await?;
            match application_archive::import(&storage, &settings, &from, &key_file, region.as_deref()).await {
                Ok(imported) => println!("{}", serde_json::to_string(&imported)?),
                Err(ArchiveError::Refused(why)) => {
                    eprintln!("gatehouse: {why}");
                    return Ok(ExitCode::FAILURE);
                }
                Err(err) => return Err(err.into()),
            }
        }
        Command::Audit { command: AuditCommand::Verify { application } } => {
            let storage = startup::open_storage(&settings).await?;
            let mut found = false;
            for (at, shard) in storage.held() {
                let result = audit::query::verify(&shard.conn, application).await?;
                if matches!(result, Ok(0)) {
                    continue;
                }
                found = true;
                match result {
                    Ok(rows) => println!(
                        "{}",
                        serde_json::json!({"application_id": application, "region": at.region, "shard": at.name, "ok": true, "rows": rows})
                    ),
                    Err(broken) => {
                        println!(
                            "{}",
                            serde_json::json!({"application_id": application, "region": at.region, "shard": at.name, "ok": false, "first_bad_seq": broken.seq, "reason": broken.reason})
                        );
                        return Ok(ExitCode::FAILURE);
                    }
                }
            }
            if !found {
                eprintln!("no audit rows for application {application}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn master_key_command(
    settings: &Settings,
    command: MasterKeyCommand,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match command {
        MasterKeyCommand::Generate => {
            let current = MasterKey::load_or_generate(&settings.security, &settings.storage.data_dir)?;
            println!("{}", MasterKey::generate(current.id % 255 + 1));
        }
        MasterKeyCommand::New => {
            if settings.security.master_key.is_some() {
                eprintln!("gatehouse: security.master_key is configured: put `gatehouse master-key generate`'s key there, and the current one in security.previous_master_key");
                return Ok(ExitCode::FAILURE);
            }
            match gatehouse::crypto::master_key::renew_file(&settings.storage.data_dir) {
                Ok(id) => println!("{}", serde_json::json!({"key_id": id})),
                Err(why) => {
                    eprintln!("gatehouse: {why}");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        MasterKeyCommand::Rotate => {
            let storage = startup::open_storage(settings).await?;
            let rotation = gatehouse::areas::master_key_rotation::rotate(&storage).await?;
            println!("{}", serde_json::to_string(&rotation)?);
            if rotation.remaining > 0 || !rotation.skipped.is_empty() {
                eprintln!("values remain sealed under another key than the current one: run the command again");
                return Ok(ExitCode::FAILURE);
            }
            if rotation.previous_key_id.is_some() {
                eprintln!("every value is sealed under key {}: the previous key is no longer needed (remove security.previous_master_key, or {})",
                    rotation.key_id, settings.storage.data_dir.join(gatehouse::crypto::master_key::PREVIOUS_FILE).display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn shards_command(
    storage: &Storage,
    settings: &Settings,
    command: ShardsCommand,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match command {
        ShardsCommand::List => {
            for shard in shard_admin::list(storage, settings).await? {
                println!("{shard}");
            }
        }
        ShardsCommand::Add { region, name, database_url } => {
            match shard_admin::add(storage, settings, &region, &name, &database_url).await {
                Ok(added) => println!("{added}"),
                Err(ShardError::Refused(why)) => {
                    eprintln!("gatehouse: {why}");
                    return Ok(ExitCode::FAILURE);
                }
                Err(err) => return Err(err.into()),
            }
        }
        ShardsCommand::Move { application, to, wait_seconds } => {
            let wait = std::time::Duration::from_secs(wait_seconds);
            match shard_admin::move_application(storage, application, &to, wait).await {
                Ok((row, cleaned)) => {
                    println!("{row}");
                    if !cleaned {
                        eprintln!("the move has not ended as `cleaned` (see its `step`; `gatehouse moves list`)");
                        return Ok(ExitCode::FAILURE);
                    }
                }
                Err(ShardError::Refused(why)) => {
                    eprintln!("gatehouse: {why}");
                    return Ok(ExitCode::FAILURE);
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks for the move to be cancelled, then waits for its roll-back; prints
/// the journal's row as JSON. Fails when there is no move, when it has
/// switched already, or when no node rolled it back within `wait`.
async fn cancel_move(
    catalog: &Db,
    application: Uuid,
    wait: std::time::Duration,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match move_journal::request_cancel(catalog, application).await? {
        CancelAsked::NoMove => {
            eprintln!("application {application} has no region move");
            return Ok(ExitCode::FAILURE);
        }
        CancelAsked::TooLate(row) => {
            println!("{}", serde_json::to_string(&row)?);
            if row.finished_at.is_some() {
                eprintln!("the move has ended (`{}`): there is nothing to cancel", row.step);
            } else {
                eprintln!("the move has reached `{}`: it can no longer be rolled back, and completes", row.step);
            }
            return Ok(ExitCode::FAILURE);
        }
        CancelAsked::Requested(_) => {}
    }
    let until = std::time::Instant::now() + wait;
    loop {
        let row = move_journal::find(catalog, application).await?.ok_or("the move's journal row is gone")?;
        if row.step == move_journal::Step::RolledBack.as_str() || std::time::Instant::now() >= until {
            println!("{}", serde_json::to_string(&row)?);
            if row.step == move_journal::Step::RolledBack.as_str() {
                return Ok(ExitCode::SUCCESS);
            }
            eprintln!(
                "cancel requested; the move is still `{}`: the node running it, or the next node of `{}` to resume it, rolls it back",
                row.step, row.from_region
            );
            return Ok(ExitCode::FAILURE);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
