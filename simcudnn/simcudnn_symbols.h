/* The one table of the functions simcudnn exports that answer CUDNN_STATUS_NOT_SUPPORTED: every
 * cudnn* function that Debian trixie's PyTorch 2.6 (libtorch_cuda.so.2.6, libtorch_python.so.2.6)
 * imports from libcudnn.so.9, but the four simcudnn.c answers itself (cudnnGetVersion,
 * cudnnGetCudartVersion, cudnnGetErrorString, cudnnGetLastErrorString) and cudnnGetProperty.
 * tests/simcudnn checks both directions against those libraries when the torch root is there.
 * X(name): one entry a line. */
#ifndef SIMCUDNN_SYMBOLS_H
#define SIMCUDNN_SYMBOLS_H

/* clang-format off */
#define SIMCUDNN_NOT_SUPPORTED(X) \
    X(cudnnBackendCreateDescriptor) \
    X(cudnnBackendDestroyDescriptor) \
    X(cudnnBackendExecute) \
    X(cudnnBackendFinalize) \
    X(cudnnBackendGetAttribute) \
    X(cudnnBackendSetAttribute) \
    X(cudnnBatchNormalizationBackwardEx) \
    X(cudnnBatchNormalizationForwardInference) \
    X(cudnnBatchNormalizationForwardTrainingEx) \
    X(cudnnCTCLoss) \
    X(cudnnCTCLoss_v8) \
    X(cudnnConvolutionBackwardData) \
    X(cudnnConvolutionBackwardFilter) \
    X(cudnnConvolutionBiasActivationForward) \
    X(cudnnConvolutionForward) \
    X(cudnnCreate) \
    X(cudnnCreateActivationDescriptor) \
    X(cudnnCreateCTCLossDescriptor) \
    X(cudnnCreateConvolutionDescriptor) \
    X(cudnnCreateDropoutDescriptor) \
    X(cudnnCreateFilterDescriptor) \
    X(cudnnCreatePoolingDescriptor) \
    X(cudnnCreateRNNDataDescriptor) \
    X(cudnnCreateRNNDescriptor) \
    X(cudnnCreateSpatialTransformerDescriptor) \
    X(cudnnCreateTensorDescriptor) \
    X(cudnnDestroyActivationDescriptor) \
    X(cudnnDestroyCTCLossDescriptor) \
    X(cudnnDestroyConvolutionDescriptor) \
    X(cudnnDestroyDropoutDescriptor) \
    X(cudnnDestroyFilterDescriptor) \
    X(cudnnDestroyRNNDataDescriptor) \
    X(cudnnDestroyRNNDescriptor) \
    X(cudnnDestroySpatialTransformerDescriptor) \
    X(cudnnDestroyTensorDescriptor) \
    X(cudnnDropoutGetStatesSize) \
    X(cudnnFindConvolutionBackwardDataAlgorithmEx) \
    X(cudnnFindConvolutionBackwardFilterAlgorithmEx) \
    X(cudnnFindConvolutionForwardAlgorithmEx) \
    X(cudnnGetBatchNormalizationBackwardExWorkspaceSize) \
    X(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize) \
    X(cudnnGetBatchNormalizationTrainingExReserveSpaceSize) \
    X(cudnnGetCTCLossWorkspaceSize) \
    X(cudnnGetCTCLossWorkspaceSize_v8) \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
    X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
    X(cudnnGetConvolutionBackwardFilterWorkspaceSize) \
    X(cudnnGetConvolutionForwardAlgorithm_v7) \
    X(cudnnGetConvolutionForwardWorkspaceSize) \
    X(cudnnGetFilterNdDescriptor) \
    X(cudnnGetRNNTempSpaceSizes) \
    X(cudnnGetRNNWeightParams) \
    X(cudnnGetRNNWeightSpaceSize) \
    X(cudnnGetStream) \
    X(cudnnGetTensorNdDescriptor) \
    X(cudnnPoolingForward) \
    X(cudnnRNNBackwardData_v8) \
    X(cudnnRNNBackwardWeights_v8) \
    X(cudnnRNNForward) \
    X(cudnnRestoreDropoutDescriptor) \
    X(cudnnSetActivationDescriptor) \
    X(cudnnSetCTCLossDescriptorEx) \
    X(cudnnSetCTCLossDescriptor_v9) \
    X(cudnnSetConvolutionGroupCount) \
    X(cudnnSetConvolutionMathType) \
    X(cudnnSetConvolutionNdDescriptor) \
    X(cudnnSetDropoutDescriptor) \
    X(cudnnSetFilterNdDescriptor) \
    X(cudnnSetPooling2dDescriptor) \
    X(cudnnSetRNNDataDescriptor) \
    X(cudnnSetRNNDescriptor_v8) \
    X(cudnnSetSpatialTransformerNdDescriptor) \
    X(cudnnSetStream) \
    X(cudnnSetTensorNdDescriptor) \
    X(cudnnSpatialTfGridGeneratorBackward) \
    X(cudnnSpatialTfGridGeneratorForward) \
    X(cudnnSpatialTfSamplerBackward) \
    X(cudnnSpatialTfSamplerForward)
/* clang-format on */

#endif /* SIMCUDNN_SYMBOLS_H */
