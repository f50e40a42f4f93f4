//! What handlers share besides the store: the clients of outside providers, one per type,
//! registered on the loop and reached through [`WorkContext::resource`].
//!
//! A handler declares the types it takes in [`WorkHandler::needs`], so `build` refuses a
//! loop that lacks one (the worker does not start) instead of failing items later. A
//! resource built from the environment is registered with [`Resources::insert_with`]: it is
//! built on first use, so building the loop (as the worker's own tests do) reads no
//! setting, and the worker builds every one before it claims anything
//! ([`WorkLoop::init_resources`]), so a missing setting stops it at start.
//!
//! [`WorkContext::resource`]: crate::WorkContext::resource
//! [`WorkHandler::needs`]: crate::WorkHandler::needs
//! [`WorkLoop::init_resources`]: crate::WorkLoop::init_resources

use std::any::{Any, TypeId, type_name};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

type Shared = Arc<dyn Any + Send + Sync>;
type Init = Box<dyn Fn() -> Result<Shared, String> + Send + Sync>;

/// Why a resource could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    #[error("no resource of type `{resource}` is registered on the loop")]
    Missing { resource: &'static str },
    #[error("resource `{resource}` could not be built: {reason}")]
    Failed {
        resource: &'static str,
        reason: String,
    },
}

struct Slot {
    name: &'static str,
    value: Mutex<Option<Shared>>,
    init: Option<Init>,
}

impl Slot {
    fn get(&self) -> Result<Shared, ResourceError> {
        if let Some(v) = self.lock().as_ref() {
            return Ok(v.clone());
        }
        let init = self.init.as_ref().ok_or(ResourceError::Missing {
            resource: self.name,
        })?;
        // Built without the lock held (an init may take its time, and must not block the
        // handlers of other items on it); not cached on failure, so the next use tries
        // again. When two build at once, the first stored wins.
        let built = init().map_err(|reason| ResourceError::Failed {
            resource: self.name,
            reason,
        })?;
        Ok(self.lock().get_or_insert(built).clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Shared>> {
        self.value.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The resources of one loop, by type. Cloning shares them.
#[derive(Clone, Default)]
pub struct Resources {
    slots: BTreeMap<TypeId, Arc<Slot>>,
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names only: a client's fields may hold a credential.
        let mut names: Vec<&str> = self.slots.values().map(|s| s.name).collect();
        names.sort_unstable();
        f.debug_struct("Resources").field("types", &names).finish()
    }
}

impl Resources {
    /// No resources.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `value` as the resource of type `T`, replacing an earlier one.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.slots.insert(
            TypeId::of::<T>(),
            Arc::new(Slot {
                name: type_name::<T>(),
                value: Mutex::new(Some(Arc::new(value))),
                init: None,
            }),
        );
    }

    /// Registers `init` as what builds the resource of type `T` on first use, replacing an
    /// earlier one. Its error says what is wrong (a setting's name, never its value).
    pub fn insert_with<T, F>(&mut self, init: F)
    where
        T: Send + Sync + 'static,
        F: Fn() -> Result<T, String> + Send + Sync + 'static,
    {
        self.slots.insert(
            TypeId::of::<T>(),
            Arc::new(Slot {
                name: type_name::<T>(),
                value: Mutex::new(None),
                init: Some(Box::new(move || init().map(|v| Arc::new(v) as Shared))),
            }),
        );
    }

    /// Puts `value` in the place of the registered resource of type `T` (built or not), for
    /// every holder of these resources: a test gives a loop built by the worker's own
    /// `build` the provider's twin. `Missing` when no resource of type `T` is registered.
    pub fn set<T: Send + Sync + 'static>(&self, value: T) -> Result<(), ResourceError> {
        let slot = self
            .slots
            .get(&TypeId::of::<T>())
            .ok_or(ResourceError::Missing {
                resource: type_name::<T>(),
            })?;
        *slot.lock() = Some(Arc::new(value));
        Ok(())
    }

    /// Whether a resource of type `id` is registered (built or not).
    pub fn contains(&self, id: TypeId) -> bool {
        self.slots.contains_key(&id)
    }

    /// The resource of type `T`, built now if it was registered with
    /// [`insert_with`](Self::insert_with) and not built yet.
    pub fn get<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, ResourceError> {
        let missing = ResourceError::Missing {
            resource: type_name::<T>(),
        };
        let slot = self.slots.get(&TypeId::of::<T>()).ok_or(missing.clone())?;
        slot.get()?.downcast::<T>().map_err(|_| missing)
    }

    /// Builds every resource not built yet, in type-name order; the first that fails stops
    /// it.
    pub fn init_all(&self) -> Result<(), ResourceError> {
        let mut slots: Vec<&Arc<Slot>> = self.slots.values().collect();
        slots.sort_by_key(|s| s.name);
        for slot in slots {
            slot.get()?;
        }
        Ok(())
    }
}

/// The resource types a handler takes, declared in [`WorkHandler::needs`](crate::WorkHandler::needs).
#[derive(Debug, Default)]
pub struct Needs {
    types: Vec<(TypeId, &'static str)>,
}

impl Needs {
    /// Declares that the handler takes the resource of type `T`.
    pub fn add<T: Send + Sync + 'static>(&mut self) -> &mut Self {
        self.types.push((TypeId::of::<T>(), type_name::<T>()));
        self
    }

    /// The first declared type `resources` does not hold.
    pub(crate) fn first_missing(&self, resources: &Resources) -> Option<&'static str> {
        self.types
            .iter()
            .find(|(id, _)| !resources.contains(*id))
            .map(|(_, name)| *name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, PartialEq)]
    struct Client(&'static str);

    #[test]
    fn a_value_comes_back_by_type_and_a_missing_one_is_named() {
        let mut r = Resources::new();
        r.insert(Client("twin"));
        assert_eq!(*r.get::<Client>().expect("registered"), Client("twin"));
        let err = r.get::<String>().expect_err("not registered");
        assert_eq!(
            err,
            ResourceError::Missing {
                resource: "alloc::string::String"
            }
        );
        assert_eq!(
            format!("{r:?}"),
            format!("Resources {{ types: [{:?}] }}", type_name::<Client>())
        );
    }

    #[test]
    fn a_lazy_resource_is_built_once_on_first_use_and_retried_after_a_failure() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let mut r = Resources::new();
        r.insert_with(move || {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            if n == 0 {
                Err("ACME_MAILER_IMPL is unset".to_owned())
            } else {
                Ok(Client("http"))
            }
        });
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "registering builds nothing"
        );
        let err = r.init_all().expect_err("the first build fails");
        assert!(
            matches!(err, ResourceError::Failed { ref reason, .. } if reason == "ACME_MAILER_IMPL is unset"),
            "{err}"
        );
        assert_eq!(*r.get::<Client>().expect("built"), Client("http"));
        r.get::<Client>().expect("cached");
        r.init_all().expect("already built");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "built once after the failure"
        );
    }

    #[test]
    fn set_replaces_a_registered_resource_for_every_clone_and_refuses_an_unregistered_one() {
        let mut r = Resources::new();
        r.insert_with(|| -> Result<Client, String> { Err("unset".to_owned()) });
        let shared = r.clone();
        r.set(Client("twin")).expect("registered");
        assert_eq!(*shared.get::<Client>().expect("set"), Client("twin"));
        shared.init_all().expect("nothing left to build");
        assert!(r.set(String::new()).is_err());
    }

    #[test]
    fn needs_name_the_first_type_not_registered() {
        let mut r = Resources::new();
        r.insert(Client("twin"));
        let mut needs = Needs::default();
        needs.add::<Client>();
        assert_eq!(needs.first_missing(&r), None);
        needs.add::<String>();
        assert_eq!(needs.first_missing(&r), Some("alloc::string::String"));
    }
}
