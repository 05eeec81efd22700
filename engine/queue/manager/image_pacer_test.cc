#include "engine/queue/manager/image_pacer.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

TEST(ImagePacerTest, ABurstThenOneBatchAMillisecond) {
  ImagePacer pacer;
  EXPECT_EQ(pacer.next(), absl::InfinitePast());
  // An idle table starts with a burst's worth of slots: 20 at once.
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(pacer.PumpNow(kStart, 0)) << i;
  }
  EXPECT_EQ(pacer.next(), kStart);
  EXPECT_TRUE(pacer.PumpNow(kStart, 0));  // next == now: the slot is open
  EXPECT_EQ(pacer.next(), kStart + absl::Milliseconds(1));
  EXPECT_FALSE(pacer.PumpNow(kStart + absl::Microseconds(999), 0));
  EXPECT_EQ(pacer.next(), kStart + absl::Milliseconds(1));
  EXPECT_TRUE(pacer.PumpNow(kStart + absl::Milliseconds(1), 0));
  EXPECT_EQ(pacer.next(), kStart + absl::Milliseconds(2));
}

TEST(ImagePacerTest, BusySubscribersWaitFiveMilliseconds) {
  ImagePacer pacer;
  EXPECT_FALSE(pacer.PumpNow(kStart, ImagePacer::kBusyInFlight));
  EXPECT_EQ(pacer.next(), kStart + absl::Milliseconds(5));
  // Below the bound again: the slot at +5 ms holds.
  EXPECT_FALSE(pacer.PumpNow(kStart + absl::Milliseconds(4), 63));
  EXPECT_TRUE(pacer.PumpNow(kStart + absl::Milliseconds(5), 63));
  EXPECT_EQ(pacer.next(), kStart + absl::Milliseconds(6));
}

}  // namespace
}  // namespace msgq
