// BackoffOptions (SubscriberOptions::backoff) and Backoff: the reconnect
// delays of a Subscriber. Defined in common/backoff.h, which the engine
// shares; this header is its public name. `cmake --install` installs
// common/backoff.h itself as <msgq/backoff.h> (cmake/MsgqInstall.cmake).
#ifndef MSGQ_BACKOFF_H_
#define MSGQ_BACKOFF_H_

#include "common/backoff.h"  // IWYU pragma: export

#endif  // MSGQ_BACKOFF_H_
