#include "cuda/nccl_names.h"

#include <gtest/gtest.h>

#include "tests/cuda/trace_reading.h"

namespace attune::gpu {
namespace {

TEST(NcclNames, KernelNamesFollowNccl) {
  EXPECT_EQ(nccl_kernel_name("AllReduce", "ncclBfloat16", "RING", "LL"),
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(nccl_kernel_name("ReduceScatter", "ncclFloat32", "PAT", "SIMPLE"),
            "ncclDevKernel_ReduceScatter_Sum_f32_PAT_SIMPLE(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(nccl_kernel_name("AllGather", "ncclBfloat16", "NVLS", "SIMPLE"),
            "ncclDevKernel_AllGather_NVLS_SIMPLE(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(nccl_kernel_name("Send", "ncclInt8", "", ""),
            "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(nccl_kernel_name("Broadcast", "ncclUint8", "", ""),
            "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
}

TEST(NcclNames, EveryKernelNameIsCommunicationForHta) {
  for (const char* func : {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Send",
                           "Recv", "AllToAll", "Unknown"}) {
    EXPECT_TRUE(testing::hta_communication(nccl_kernel_name(func, "ncclFloat16", "TREE", "LL128")))
        << func;
  }
}

TEST(NcclNames, DatatypesMapToKinetoAndSizes) {
  EXPECT_EQ(kineto_dtype("ncclBfloat16"), "BFloat16");
  EXPECT_EQ(kineto_dtype("ncclFloat32"), "Float");
  EXPECT_EQ(kineto_dtype("ncclFloat"), "Float");
  EXPECT_EQ(kineto_dtype("ncclHalf"), "Half");
  EXPECT_EQ(kineto_dtype("ncclFloat8e4m3"), "Float8_e4m3fn");
  EXPECT_EQ(kineto_dtype("mystery"), "mystery");
  EXPECT_EQ(nccl_datatype_bytes("ncclBfloat16"), 2);
  EXPECT_EQ(nccl_datatype_bytes("ncclInt64"), 8);
  EXPECT_EQ(nccl_datatype_bytes("ncclFloat8e5m2"), 1);
  EXPECT_EQ(nccl_datatype_bytes("mystery"), 0);
}

TEST(NcclNames, CollectivesMapToKineto) {
  EXPECT_EQ(kineto_collective("AllReduce"), "allreduce");
  EXPECT_EQ(kineto_collective("ReduceScatter"), "reduce_scatter");
  EXPECT_EQ(kineto_collective("AllGather"), "allgather");
  EXPECT_EQ(kineto_collective("Send"), "send");
  EXPECT_EQ(kineto_collective("Recv"), "recv");
  EXPECT_TRUE(nccl_is_point_to_point("Recv"));
  EXPECT_FALSE(nccl_is_point_to_point("AllReduce"));
}

TEST(NcclNames, MessageElementsFollowTheCollective) {
  EXPECT_EQ(nccl_message_elements("AllGather", 10, 4).in, 10);
  EXPECT_EQ(nccl_message_elements("AllGather", 10, 4).out, 40);
  EXPECT_EQ(nccl_message_elements("ReduceScatter", 10, 4).in, 40);
  EXPECT_EQ(nccl_message_elements("ReduceScatter", 10, 4).out, 10);
  EXPECT_EQ(nccl_message_elements("AllReduce", 10, 4).out, 10);
}

}  // namespace
}  // namespace attune::gpu
