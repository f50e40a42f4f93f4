//! This module provides a way to construct a `File`.
//! It is intended to be completely decoupled from the
//! parser, so as to allow to evolve the tree representation
//! and the parser algorithm independently.
use std::mem;

use crate::{
    SyntaxKind::{self, *},
    output::{Output, Step},
};

/// `Parser` produces a flat list of `Event`s.
/// They are converted to a tree-structure in
/// a separate pass, via `TreeBuilder`.
#[derive(Debug, PartialEq)]
pub(crate) enum Event {
    /// This event signifies the start of the node.
    /// It should be either abandoned (in which case the
    /// `kind` is `TOMBSTONE`, and the event is ignored),
    /// or completed via a `Finish` event.
    ///
    /// All tokens between a `Start` and a `Finish` would
    /// become the children of the respective node.
    ///
    /// For left-recursive syntactic constructs, the parser produces
    /// a child node before it sees a parent. `forward_parent`
    /// saves the position of current event's parent.
    ///
    /// Consider this path
    ///
    /// foo::bar
    ///
    /// The events for it would look like this:
    ///
    /// ```text
    /// START(PATH) IDENT('foo') FINISH START(PATH) T![::] IDENT('bar') FINISH
    ///       |                          /\
    ///       |                          |
    ///       +------forward-parent------+
    /// ```
    ///
    /// And the tree would look like this
    ///
    /// ```text
    ///    +--PATH---------+
    ///    |   |           |
    ///    |   |           |
    ///    |  '::'       'bar'
    ///    |
    ///   PATH
    ///    |
    ///   'foo'
    /// ```
    ///
    /// See also `CompletedMarker::precede`.
    Start {
        kind: SyntaxKind,
        forward_parent: Option<u32>,
    },

    /// Complete the previous `Start` event
    Finish,

    /// Produce a single leaf-element.
    /// `n_raw_tokens` is used to glue complex contextual tokens.
    /// For example, lexer tokenizes `>>` as `>`, `>`, and
    /// `n_raw_tokens = 2` is used to produced a single `>>`.
    Token {
        kind: SyntaxKind,
        n_raw_tokens: u8,
    },
    /// When we parse `foo.0.0` or `foo. 0. 0` the lexer will hand us a float literal
    /// instead of an integer literal followed by a dot as the lexer has no contextual knowledge.
    /// This event instructs whatever consumes the events to split the float literal into
    /// the corresponding parts.
    FloatSplitHack {
        ends_in_dot: bool,
    },
    // scaffold's patch: the message's index in the parser's error list.
    Error {
        msg: u32,
    },
}

impl Event {
    pub(crate) fn tombstone() -> Self {
        Event::Start { kind: TOMBSTONE, forward_parent: None }
    }
}

/// Generate the syntax tree with the control of events.
pub(super) fn process(mut events: Vec<Event>, mut errors: Vec<String>) -> Output {
    let mut res = Output::default();
    let mut forward_parents = Vec::new();

    for i in 0..events.len() {
        match mem::replace(&mut events[i], Event::tombstone()) {
            Event::Start { kind, forward_parent } => {
                // For events[A, B, C], B is A's forward_parent, C is B's forward_parent,
                // in the normal control flow, the parent-child relation: `A -> B -> C`,
                // while with the magic forward_parent, it writes: `C <- B <- A`.

                // append `A` into parents.
                forward_parents.push(kind);
                let mut idx = i;
                let mut fp = forward_parent;
                while let Some(fwd) = fp {
                    idx += fwd as usize;
                    // append `A`'s forward_parent `B`
                    fp = match mem::replace(&mut events[idx], Event::tombstone()) {
                        Event::Start { kind, forward_parent } => {
                            forward_parents.push(kind);
                            forward_parent
                        }
                        _ => unreachable!(),
                    };
                    // append `B`'s forward_parent `C` in the next stage.
                }

                for kind in forward_parents.drain(..).rev() {
                    if kind != TOMBSTONE {
                        res.enter_node(kind);
                    }
                }
            }
            Event::Finish => res.leave_node(),
            Event::Token { kind, n_raw_tokens } => {
                res.token(kind, n_raw_tokens);
            }
            Event::FloatSplitHack { ends_in_dot } => {
                res.float_split_hack(ends_in_dot);
                let ev = mem::replace(&mut events[i + 1], Event::tombstone());
                assert!(matches!(ev, Event::Finish), "{ev:?}");
            }
            Event::Error { msg } => res.error(mem::take(&mut errors[msg as usize])),
        }
    }

    res
}

/// scaffold's patch: the steps [`process`] followed by [`Output::iter`] gives, read from
/// the parser's events in place, one at a time (no `Output` is built). Only the `Start`
/// events a forward parent points at are marked consumed.
pub struct Steps {
    events: Vec<Event>,
    errors: Vec<String>,
    next: usize,
    /// Nodes still to enter, innermost first (popped from the end).
    parents: Vec<SyntaxKind>,
}

impl Steps {
    pub(super) fn new(events: Vec<Event>, errors: Vec<String>) -> Steps {
        Steps { events, errors, next: 0, parents: Vec::new() }
    }

    /// The next step, or `None` after the last.
    #[inline]
    pub fn next_step(&mut self) -> Option<Step<'_>> {
        if let Some(kind) = self.parents.pop() {
            return Some(Step::Enter { kind });
        }
        let error = loop {
            let i = self.next;
            let event = self.events.get_mut(i)?;
            self.next += 1;
            match event {
                Event::Start { kind, forward_parent: None } => {
                    if *kind != TOMBSTONE {
                        return Some(Step::Enter { kind: *kind });
                    }
                }
                Event::Start { kind, forward_parent: Some(fwd) } => {
                    let (first, mut fp) = (*kind, Some(*fwd));
                    if first != TOMBSTONE {
                        self.parents.push(first);
                    }
                    let mut idx = i;
                    while let Some(fwd) = fp {
                        idx += fwd as usize;
                        fp = match &mut self.events[idx] {
                            Event::Start { kind, forward_parent } => {
                                let kind = mem::replace(kind, TOMBSTONE);
                                if kind != TOMBSTONE {
                                    self.parents.push(kind);
                                }
                                forward_parent.take()
                            }
                            _ => unreachable!(),
                        };
                    }
                    if let Some(kind) = self.parents.pop() {
                        return Some(Step::Enter { kind });
                    }
                }
                Event::Finish => return Some(Step::Exit),
                Event::Token { kind, n_raw_tokens } => {
                    return Some(Step::Token { kind: *kind, n_input_tokens: *n_raw_tokens });
                }
                Event::FloatSplitHack { ends_in_dot } => {
                    let ends_in_dot = *ends_in_dot;
                    let ev = mem::replace(&mut self.events[i + 1], Event::tombstone());
                    assert!(matches!(ev, Event::Finish), "{ev:?}");
                    return Some(Step::FloatSplit { ends_in_dot });
                }
                Event::Error { msg } => break *msg as usize,
            }
        };
        Some(Step::Error { msg: &self.errors[error] })
    }
}
