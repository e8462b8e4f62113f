// A failed service's last line of output, read from the journal (sd-journal,
// libsystemd loaded on first use): what the settle rule's reason names on this
// backend, as the builtin supervisor names the last line of its log.
//
// Only the run mesh-host started counts: entries are matched by the unit
// (_SYSTEMD_UNIT=) and by that run's invocation id (_SYSTEMD_INVOCATION_ID=, the
// unit's InvocationID while its ExecMainPID is the run's), so output of an
// earlier run — or of a later one Restart= made — is never shown. journald reads the id from
// the sender's cgroup, so a process that exits at once — the very one whose output
// is wanted — often leaves entries without it (systemd 252: about half of them;
// _SYSTEMD_UNIT it still has, from the stream's header). Those count when they
// are the run's main process's own (_PID=, its ExecMainPID) and not older than the
// run's start. Journal text is bytes from outside: it is returned as it is (cut
// by reasonLine) and escaped where it is shown, as every reason is.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace mesh::supervise::sdjournal {

// Where to read: `configured` (Options::journalDir) when set, else
// $MESH_HOST_JOURNAL_DIR when set, else "" — the local system journal.
std::string journalDirectory(const std::string& configured);

// One run of a unit, as its output is found in the journal.
struct Run {
  std::string invocationId;  // 32 hex digits; "" unknown
  uint32_t mainPid = 0;      // its ExecMainPID; 0 unknown
  uint64_t sinceUs = 0;      // realtime µs before its start job was asked for
  // The unit's NRestarts its run counts from: a Restart= since the job makes it more
  // (systemd starts the count again at a start, unless the unit was waiting to be
  // restarted then).
  uint32_t restartsBase = 0;
};

// The last non-empty MESSAGE `run` of `unit` wrote, read from the journal files
// in `directory` ("" → the local system journal, SD_JOURNAL_LOCAL_ONLY |
// SD_JOURNAL_SYSTEM). journald may write an entry a few ms after the process that
// sent it exited: when it holds none yet, this waits for the journal to change
// (sd_journal_wait), at most `wait`. nullopt when there is none, or the journal
// cannot be read.
std::optional<std::string> lastLine(const std::string& directory, const std::string& unit,
                                    const Run& run, std::chrono::milliseconds wait);

// How a main process ended, as systemd logged it ("Main process exited, …").
struct Exit {
  std::string code;    // EXIT_CODE=: "exited", "killed", "dumped"
  int32_t status = 0;  // EXIT_STATUS=: the exit status, or the signal's number
};

// How the main process of `run` of `unit` ended: the first "Main process exited"
// entry systemd itself (_PID=1, MESSAGE_ID SD_MESSAGE_UNIT_PROCESS_EXIT) wrote for
// the unit since the run started — and of the run's invocation when its id is
// known. What the unit's ExecMainCode/ExecMainStatus no longer say once Restart=
// has started the next run. Waits for it as lastLine does; nullopt when there is
// none or the journal cannot be read.
std::optional<Exit> exitOf(const std::string& directory, const std::string& unit, const Run& run,
                           std::chrono::milliseconds wait);

}  // namespace mesh::supervise::sdjournal
