// Happens-before annotations for ThreadSanitizer, for orderings a library
// guarantees but TSan cannot see because the library is not instrumented
// (Debian's libgrpc++: it orders a reactor's OnDone after its OnCancel with
// a refcount it decrements in its own compiled code).
//
// MSGQ_TSAN_RELEASE(p) at the end of what must come first and
// MSGQ_TSAN_ACQUIRE(p) at the start of what comes after, on the same
// address: TSan then orders every access before the release before every
// access after the acquire. Without -fsanitize=thread both are no-ops.
// They declare an ordering; they create none: use them only where the
// library documents it.
#ifndef MSGQ_COMMON_TSAN_ANNOTATIONS_H_
#define MSGQ_COMMON_TSAN_ANNOTATIONS_H_

#if defined(__SANITIZE_THREAD__)
#define MSGQ_TSAN_ENABLED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MSGQ_TSAN_ENABLED 1
#endif
#endif

#ifdef MSGQ_TSAN_ENABLED
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define MSGQ_TSAN_ACQUIRE(addr) __tsan_acquire(static_cast<void*>(addr))
#define MSGQ_TSAN_RELEASE(addr) __tsan_release(static_cast<void*>(addr))
#else
#define MSGQ_TSAN_ACQUIRE(addr) static_cast<void>(addr)
#define MSGQ_TSAN_RELEASE(addr) static_cast<void>(addr)
#endif

#endif  // MSGQ_COMMON_TSAN_ANNOTATIONS_H_
