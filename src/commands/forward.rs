//! `envctl forward TARGET [PORT…]`: a remote container's published ports on this
//! machine's 127.0.0.1, through the ssh route to its daemon (`ops::forward`), until
//! Ctrl-C. stdout gets one `127.0.0.1:PORT` per forward once it is open (with `--json`,
//! one document); stderr says where each leads.

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;

/// `envctl forward`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct ForwardArgs {
    /// The container, or the profile whose container it is
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::targets))]
    pub target: String,
    /// Only these ports (the container's, or as published on its host); default: every
    /// TCP port it publishes
    pub ports: Vec<u16>,
}

pub fn run(arguments: ForwardArgs, context: &Context) -> Result<ExitStatus, Error> {
    let mut printed = Ok(());
    let status = runtime()?.block_on(crate::ops::forward::forward(
        &arguments.target,
        &arguments.ports,
        context,
        |plan| {
            for port in &plan.ports {
                context.printer.info(&if plan.needs_forward {
                    format!(
                        "forwarding http://{} to {} of {} ({}:{} on {})",
                        port.local_address(),
                        port.container_words(),
                        plan.container,
                        port.remote_ip,
                        port.remote_port,
                        crate::ui::text::shown(&plan.host)
                    )
                } else {
                    // The daemon is this machine's: its ports are here already.
                    format!(
                        "{} of {} is on this machine already: http://{}",
                        port.container_words(),
                        plan.container,
                        port.local_address()
                    )
                });
            }
            if plan.needs_forward {
                context.printer.info("press Ctrl-C to stop");
            }
            printed = print_addresses(plan, context);
        },
    ))?;
    printed?;
    Ok(status)
}

/// The local addresses, as data: one per line, or the plan as one JSON document.
fn print_addresses(plan: &crate::ops::forward::Plan, context: &Context) -> Result<(), Error> {
    if context.json {
        return context.printer.json(plan);
    }
    for port in &plan.ports {
        context.printer.data(&port.local_address())?;
    }
    Ok(())
}
