// Package inventory records which objects a sync applied and decides, safely,
// which of them may be pruned.
//
// Contract: an object is deleted only when it is in the previous inventory, is
// absent from the new one, still carries this sync's owner labels, and its live
// UID equals the recorded one. Nothing is pruned after a failed or empty
// render unless explicitly allowed. Deletes carry UID preconditions.
package inventory
