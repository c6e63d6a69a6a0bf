//! `doca_data` as user data: the 64 bits a task carries to its completion, or a connection
//! keeps, typed.

use dpakit_abi::Word;

/// The user data a task carries to its completion (`doca_task_set_user_data`), or a Comch
/// connection or Comm Channel peer keeps: any [`Word`] — an integer, a handle, a `Pod` of at most
/// 8 bytes — stored as DOCA's 64 bits and read back as the same type with [`UserData::get`].
///
/// ```
/// use dpakit::UserData;
/// use dpakit::abi::pod_struct;
///
/// pod_struct! {
///     /// Which request, of which client.
///     #[derive(Debug, PartialEq, Eq)]
///     pub struct Tag { client: u32, seq: u32 }
/// }
/// let data = UserData::from(Tag { client: 3, seq: 9 });
/// assert_eq!(data.get::<Tag>(), Tag { client: 3, seq: 9 });
/// assert_eq!(UserData::from(7u64).get::<u64>(), 7);
/// ```
#[doc(alias = "doca_data")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UserData(u64);

impl UserData {
    /// The user data whose 64 bits are `raw`.
    pub const fn from_raw(raw: u64) -> Self {
        UserData(raw)
    }

    /// The 64 bits as DOCA holds them.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The value, as the type it was made from.
    pub fn get<T: Word>(self) -> T {
        T::from_word(self.0)
    }
}

impl<T: Word> From<T> for UserData {
    fn from(value: T) -> Self {
        UserData(value.into_word())
    }
}
