"""MindSpore's box and region primitive classes (IOU, BoundingBoxEncode/Decode, CheckValid,
CropAndResize, ROIAlign, NMSWithMask, ExtractVolumePatches): the attributes fixed at
construction, the computation in ops/function_more/vision.py."""
from mycel.ops.function_more import vision as _v
from mycel.ops.operations.compat_ops import _Composite


class IOU(_Composite):
    """ops.iou as a primitive: IOU(mode)(anchor_boxes, gt_boxes) -> (M, N)."""

    def __init__(self, mode="iou"):
        if mode not in ("iou", "iof"):
            raise KeyError(f"IOU: mode must be 'iou' or 'iof', got {mode!r}")
        super().__init__(mode=mode)

    def _call(self, anchor_boxes, gt_boxes):
        return _v.iou(anchor_boxes, gt_boxes, self.mode)


class BoundingBoxEncode(_Composite):
    """ops.bounding_box_encode as a primitive: (anchor_box, groundtruth_box) -> deltas."""

    def __init__(self, means=(0.0, 0.0, 0.0, 0.0), stds=(1.0, 1.0, 1.0, 1.0)):
        super().__init__(means=tuple(means), stds=tuple(stds))

    def _call(self, anchor_box, groundtruth_box):
        return _v.bounding_box_encode(anchor_box, groundtruth_box, self.means, self.stds)


class BoundingBoxDecode(_Composite):
    """ops.bounding_box_decode as a primitive: (anchor_box, deltas) -> boxes."""

    def __init__(self, max_shape, means=(0.0, 0.0, 0.0, 0.0), stds=(1.0, 1.0, 1.0, 1.0), wh_ratio_clip=0.016):
        super().__init__(max_shape=tuple(max_shape), means=tuple(means), stds=tuple(stds),
                         wh_ratio_clip=float(wh_ratio_clip))

    def _call(self, anchor_box, deltas):
        return _v.bounding_box_decode(anchor_box, deltas, self.max_shape, self.means, self.stds, self.wh_ratio_clip)


class CheckValid(_Composite):
    """ops.check_valid as a primitive: (bboxes, img_metas) -> bool (N,)."""

    def _call(self, bboxes, img_metas):
        return _v.check_valid(bboxes, img_metas)


class CropAndResize(_Composite):
    """ops.crop_and_resize as a primitive: (x, boxes, box_index, crop_size)."""

    def __init__(self, method="bilinear", extrapolation_value=0.0):
        if method not in ("bilinear", "nearest", "bilinear_v2"):
            raise ValueError(f"CropAndResize: method must be 'bilinear', 'nearest' or 'bilinear_v2', got {method!r}")
        super().__init__(method=method, extrapolation_value=float(extrapolation_value))

    def _call(self, x, boxes, box_index, crop_size):
        return _v.crop_and_resize(x, boxes, box_index, crop_size, self.method, self.extrapolation_value)


class ROIAlign(_Composite):
    """ROIAlign(pooled_height, pooled_width, spatial_scale, sample_num=2, roi_end_mode=1)(features, rois)."""

    def __init__(self, pooled_height, pooled_width, spatial_scale, sample_num=2, roi_end_mode=1):
        super().__init__(pooled_height=pooled_height, pooled_width=pooled_width, spatial_scale=float(spatial_scale),
                         sample_num=sample_num, roi_end_mode=roi_end_mode)

    def _call(self, features, rois):
        return _v.roi_align(features, rois, self.pooled_height, self.pooled_width, self.spatial_scale,
                            self.sample_num, self.roi_end_mode)


class NMSWithMask(_Composite):
    """NMSWithMask(iou_threshold)(bboxes (N, 5)) -> (sorted boxes, positions, keep mask)."""

    def __init__(self, iou_threshold=0.5):
        if isinstance(iou_threshold, bool) or not isinstance(iou_threshold, (int, float)):
            raise TypeError(f"NMSWithMask: iou_threshold must be a float, got {type(iou_threshold).__name__}")
        super().__init__(iou_threshold=float(iou_threshold))

    def _call(self, bboxes):
        return _v.nms_with_mask(bboxes, self.iou_threshold)


class ExtractVolumePatches(_Composite):
    """ExtractVolumePatches(kernel_size, strides, padding)(x (N, C, D, H, W))."""

    def __init__(self, kernel_size, strides, padding):
        super().__init__(kernel_size=kernel_size, strides=strides, padding=padding)

    def _call(self, x):
        return _v.extract_volume_patches(x, self.kernel_size, self.strides, self.padding)


COMPOSITES = ["IOU", "BoundingBoxEncode", "BoundingBoxDecode", "CheckValid", "CropAndResize", "ROIAlign",
              "NMSWithMask", "ExtractVolumePatches"]
