// Write versions of storages: what a cache of values derived from a tensor's memory (graph
// mode's folded batch norm) compares to know that they are still current. A storage gets its
// number when a cache first asks after a write; every tracked writer drops it (assign, the graph
// VM's kAssign, an op's mutated inputs, the end of a numpy/DLPack view), so the next ask hands
// out a new one. Writes through a view still alive, or to memory borrowed from another owner,
// cannot be seen: version 0 then says "do not cache". The state lives in atomics inside the
// Storage (Storage::WriteState): a tracked write is one relaxed load, and a store only when a
// cache holds a number; no lock and no table.
#pragma once
#include <cstdint>

namespace mycel {

class Storage;

/// A number unique to s's current contents among all storages ever made; 0 while writes to s
/// may go untracked (borrowed memory, or a numpy/DLPack view of it alive).
uint64_t write_version(const Storage& s);
/// s was written by a tracked writer: its contents get a new version.
void note_write(const Storage& s);
/// A view of s was handed to numpy/DLPack (which may write through it), and released.
void begin_export(const Storage& s);
void end_export(const Storage& s);
/// s is memory borrowed from another owner, who may write it untracked.
void mark_borrowed(const Storage& s);

}  // namespace mycel
