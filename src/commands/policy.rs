//! `envctl policy push FILE | show | remove`: the admin's policy kept at the daemon
//! (`ops::daemon_policy`), obeyed by every client of that daemon from any machine; a
//! client's own file (`ENVCTL_POLICY`, `/etc/envctl/policy.toml`) can tighten it, never
//! loosen it.

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::policy::PolicyReport;

/// `envctl policy`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum PolicyCommand {
    /// Keep a policy file at the daemon, so that every client of it obeys it
    ///
    /// The file is checked first (its problems are shown with their lines) and replaces
    /// the policy pushed before. `-H`, a context or DOCKER_HOST names the daemon.
    Push {
        /// The policy file (docs/shared-servers.md, "Policy")
        file: String,
    },
    /// Print every policy in force here: the daemon's pushed one, then this machine's file
    Show,
    /// Remove the policy pushed to the daemon
    Remove,
}

pub fn run(arguments: PolicyArgs, context: &Context) -> Result<ExitStatus, Error> {
    match arguments.command {
        PolicyCommand::Push { file } => {
            let pushed = runtime()?.block_on(crate::ops::daemon_policy::push(&file, context))?;
            if context.json {
                context.printer.json(&pushed)?;
                return Ok(ExitStatus::Success);
            }
            context.printer.info(&format!(
                "pushed `{}` to the daemon at {} ({}{}): every client of it now obeys it",
                crate::ui::text::shown(&pushed.file),
                crate::ui::text::shown(&pushed.endpoint),
                crate::profile::error::plural(pushed.policy.rules.len(), "rule"),
                if pushed.replaced {
                    ", replacing the one pushed before"
                } else {
                    ""
                }
            ));
            Ok(ExitStatus::Success)
        }
        PolicyCommand::Show => {
            let shown = runtime()?.block_on(crate::ops::daemon_policy::show(context))?;
            if context.json {
                context.printer.json(&shown)?;
                return Ok(ExitStatus::Success);
            }
            if shown.policies.is_empty() {
                context.printer.info(&format!(
                    "no policy is in force: none was pushed to the daemon at {} and this machine has no policy file",
                    crate::ui::text::shown(&shown.endpoint)
                ));
            }
            for policy in &shown.policies {
                context.printer.data(&policy_text(policy))?;
            }
            Ok(ExitStatus::Success)
        }
        PolicyCommand::Remove => {
            let removed = runtime()?.block_on(crate::ops::daemon_policy::remove(context))?;
            if context.json {
                context.printer.json(&removed)?;
                return Ok(ExitStatus::Success);
            }
            context.printer.info(&if removed.removed {
                format!(
                    "removed the policy pushed to the daemon at {}",
                    crate::ui::text::shown(&removed.endpoint)
                )
            } else {
                format!(
                    "no policy was pushed to the daemon at {}: nothing to remove",
                    crate::ui::text::shown(&removed.endpoint)
                )
            });
            Ok(ExitStatus::Success)
        }
    }
}

/// One policy in force, for stdout: where it came from, then its rules with their lines.
fn policy_text(policy: &PolicyReport) -> String {
    let mut text = match &policy.origin {
        crate::policy::Origin::Daemon { .. } => {
            format!("daemon policy ({})", super::doctor::pushed_words(policy))
        }
        crate::policy::Origin::File => {
            format!("host policy ({})", crate::ui::text::shown(&policy.path))
        }
    };
    if policy.rules.is_empty() {
        text.push_str("\n  no rules: every container is allowed");
    }
    for rule in &policy.rules {
        text.push_str(&format!(
            "\n  {} = {} (line {})",
            rule.rule,
            crate::ui::text::shown(&rule.value_text()),
            rule.line
        ));
    }
    text
}
